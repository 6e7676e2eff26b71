import { expect, it } from "vitest";
import { compileResidencyPolicyOptions, DEFAULT_RESIDENCY_POLICY_OPTIONS } from "./options.js";

it("fills defaults", () => {
  expect(compileResidencyPolicyOptions()).toEqual(DEFAULT_RESIDENCY_POLICY_OPTIONS);
  expect(compileResidencyPolicyOptions({ minResidencyMs: 0 }).minResidencyMs).toBe(0);
});

it.each([
  [{ headroomFraction: 1 }, /headroomFraction/],
  [{ minResidencyMs: -1 }, /minResidencyMs/],
  [{ horizonMs: 0 }, /horizonMs/],
  [{ evictMargin: Number.NaN }, /evictMargin/],
  [{ replicateAbovePending: 0.5 }, /replicateAbovePending/],
  [{ bogus: 1 }, /unknown option bogus/],
])("refuses %o", (options, message) => {
  expect(() => compileResidencyPolicyOptions(options as never)).toThrow(message);
});
