import { expect, it } from "vitest";
import { DemandMeter } from "./demand-meter.js";

it("tracks pending work, a smoothed arrival rate and the last time a model had work", () => {
  const meter = new DemandMeter(1000);
  const none = new Map<string, number>();
  meter.sample(["a", "b"], new Map([["a", 2]]), none, 0);
  expect(meter.get("a")).toEqual({ pending: 2, ratePerS: 0, lastDemandAt: 0 });
  expect(meter.get("b")).toEqual({ pending: 0, ratePerS: 0, lastDemandAt: undefined });
  // One second later: the queue grew by 2 and 6 items were served → 8 items/s, half weighted.
  meter.sample(["a", "b"], new Map([["a", 4]]), new Map([["a", 6]]), 1000);
  expect(meter.get("a").ratePerS).toBeCloseTo(4);
  expect(meter.get("a").lastDemandAt).toBe(1000);
  // Idle: the rate decays, the last-demand time stays.
  meter.sample(["a", "b"], none, new Map([["a", 6]]), 2000);
  expect(meter.get("a").ratePerS).toBeCloseTo(2);
  expect(meter.get("a")).toMatchObject({ pending: 0, lastDemandAt: 1000 });
});

it("does not count a served counter that went down (a copy unloaded) as negative work", () => {
  const meter = new DemandMeter(1000);
  meter.sample(["a"], new Map(), new Map([["a", 100]]), 0);
  meter.sample(["a"], new Map(), new Map([["a", 0]]), 1000);
  expect(meter.get("a").ratePerS).toBe(0);
  expect(meter.get("unknown")).toEqual({ pending: 0, ratePerS: 0, lastDemandAt: undefined });
});
