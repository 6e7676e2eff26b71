import { describe, expect, it } from "vitest";
import { findKnee, kneeMiss } from "./knee.js";
import type { StepResult } from "./step-result.js";
import { percentiles, quantile } from "./step-result.js";

function step(offeredRps: number, p99: number, over: Partial<StepResult> = {}): StepResult {
  return {
    offeredRps,
    sent: offeredRps * 10,
    sentRps: offeredRps,
    achievedRps: offeredRps,
    achievedTokensPerS: offeredRps * 100,
    failed: 0,
    latencyMs: { p50: p99 / 2, p90: p99 * 0.8, p99 },
    ...over,
  };
}

describe("findKnee", () => {
  const slo = { sloP99Ms: 100 };

  it("is the last step before p99 leaves the SLO", () => {
    const steps = [step(10, 20), step(20, 40), step(30, 90), step(40, 300), step(50, 80)];
    const knee = findKnee(steps, slo);
    expect(knee.step?.offeredRps).toBe(30);
    expect(knee.index).toBe(2);
    // The step at 50 that passes again is above a miss: not capacity.
    expect(knee.firstMiss).toEqual({ index: 3, reason: "slo" });
  });

  it("stops where throughput stops keeping up, even with a good p99", () => {
    const steps = [step(10, 20), step(20, 30, { achievedRps: 18 }), step(30, 30)];
    expect(findKnee(steps, slo)).toMatchObject({ index: 0, firstMiss: { reason: "saturated" } });
  });

  it("judges keeping up against the load actually sent, not the nominal rate", () => {
    // The Poisson plan happened to send 18/s at a nominal 20/s, and all of it came back.
    const steps = [step(10, 20), step(20, 30, { sentRps: 18, achievedRps: 17.9 }), step(30, 30)];
    expect(findKnee(steps, slo)).toEqual({ step: steps[2], index: 2 });
  });

  it("stops at a step with failed requests", () => {
    const steps = [step(10, 20), step(20, 30, { failed: 1 })];
    expect(findKnee(steps, slo)).toMatchObject({ index: 0, firstMiss: { reason: "errors" } });
  });

  it("is the last step when none misses, and none when the first does", () => {
    expect(findKnee([step(10, 1), step(20, 2)], slo)).toEqual({ step: step(20, 2), index: 1 });
    const none = findKnee([step(10, 500)], slo);
    expect(none.step).toBeUndefined();
    expect(none.index).toBe(-1);
  });

  it("counts a p99 exactly at the SLO as within it", () => {
    expect(kneeMiss(step(10, 100), slo)).toBeUndefined();
    expect(kneeMiss(step(10, 100.5), slo)).toBe("slo");
  });

  it("keeps up while at least 95 % of the load sent is answered, unless told another share", () => {
    expect(kneeMiss(step(100, 20, { achievedRps: 95 }), slo)).toBeUndefined();
    expect(kneeMiss(step(100, 20, { achievedRps: 94.5 }), slo)).toBe("saturated");
    expect(kneeMiss(step(100, 20, { achievedRps: 60 }), { ...slo, keepUp: 0.5 })).toBeUndefined();
  });

  it("treats a step with no answers (NaN p99) as a miss", () => {
    expect(kneeMiss(step(10, Number.NaN), slo)).toBe("slo");
  });

  it("refuses steps out of order", () => {
    expect(() => findKnee([step(20, 1), step(10, 1)], slo)).toThrow(/ascending/);
  });
});

describe("percentiles", () => {
  it("takes the nearest rank", () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentiles(xs)).toEqual({ p50: 50, p90: 90, p99: 99 });
    expect(quantile([], 0.5)).toBeNaN();
    expect(quantile([7], 0.99)).toBe(7);
  });
});
