import { expect, it } from "vitest";
import { compileResidencyPolicyOptions } from "./options.js";
import type { ModelDemand } from "./snapshot.js";
import { demand, keepValue, loadNeed, recency } from "./value.js";

const o = compileResidencyPolicyOptions({
  horizonMs: 10_000,
  recencyTauMs: 60_000,
  loadCostMs: 1000,
  starvationMs: 2000,
});
const m: ModelDemand = {
  model: "a",
  pinned: false,
  bytes: 1,
  loadMs: 1000,
  pending: 4,
  ratePerS: 2,
  lastDemandAt: 0,
  waitingSince: 0,
  blocked: false,
};

it("demand is what is queued plus what arrives over the horizon", () => {
  expect(demand(m, o)).toBe(4 + 20);
});

it("recency decays from 1, and is 0 for a model never used", () => {
  expect(recency(m, 0, o)).toBe(1);
  expect(recency(m, 60_000, o)).toBeCloseTo(Math.exp(-1));
  expect(recency({ ...m, lastDemandAt: undefined }, 0, o)).toBe(0);
});

it("keep value splits demand over copies and grows with load cost", () => {
  expect(keepValue(m, 1, 0, o)).toBe((24 + 1) * 2);
  expect(keepValue(m, 2, 0, o)).toBe((12 + 1) * 2);
  expect(keepValue({ ...m, loadMs: 3000 }, 1, 0, o)).toBe((24 + 1) * 4);
});

it("need grows with waiting and is infinite for a pinned model", () => {
  expect(loadNeed(m, 0, o)).toBe(24);
  expect(loadNeed(m, 2000, o)).toBe(48);
  expect(loadNeed({ ...m, pinned: true }, 0, o)).toBe(Number.POSITIVE_INFINITY);
});
