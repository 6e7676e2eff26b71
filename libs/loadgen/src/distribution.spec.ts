import { describe, expect, it } from "vitest";
import { compileDistribution, mean, sample } from "./distribution.js";
import { Random } from "./random.js";
import { WorkloadError } from "./workload-error.js";

describe("compileDistribution", () => {
  it("reads each form", () => {
    expect(compileDistribution(12, "d")).toEqual({ kind: "constant", value: 12 });
    expect(compileDistribution({ uniform: [8, 250] }, "d")).toEqual({
      kind: "uniform",
      low: 8,
      high: 250,
    });
    expect(compileDistribution({ lognormal: { median: 64, sigma: 0.5 }, max: 256 }, "d")).toEqual({
      kind: "lognormal",
      median: 64,
      sigma: 0.5,
      min: 1,
      max: 256,
    });
  });

  it.each([
    [0, "d must be an integer in 1..=1000000, got 0"],
    [1.5, "d must be an integer in 1..=1000000, got 1.5"],
    ["12", "d must be a number or an object"],
    [null, "d must be a number or an object"],
    [{}, "d must have exactly one of constant, uniform, lognormal"],
    [{ constant: 1, uniform: [1, 2] }, "d must have exactly one of"],
    [{ constant: 1, mean: 3 }, "d: unknown key mean"],
    [{ uniform: [9, 3] }, "d.uniform: low 9 is above high 3"],
    [{ uniform: [1] }, "d.uniform must be [low, high]"],
    [{ lognormal: { median: 5 } }, "d.lognormal.sigma must be a number in 0..=4"],
    [{ lognormal: { median: 5, sigma: 1, mu: 2 } }, "d.lognormal: unknown key mu"],
    [{ constant: 5, min: 10, max: 2 }, "d: min 10 is above max 2"],
    [{ constant: 1e9 }, "d.constant must be an integer in 1..=1000000"],
  ])("refuses %j", (raw, message) => {
    expect(() => compileDistribution(raw, "d")).toThrow(WorkloadError);
    expect(() => compileDistribution(raw, "d")).toThrow(message);
  });
});

describe("sample", () => {
  it("stays within uniform bounds and reaches both ends", () => {
    const r = new Random(4);
    const d = compileDistribution({ uniform: [3, 6] }, "d");
    const seen = new Set(Array.from({ length: 500 }, () => sample(d, r)));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });

  it("gives log-normal values around the median, clamped", () => {
    const r = new Random(5);
    const d = compileDistribution({ lognormal: { median: 64, sigma: 1 }, min: 4, max: 250 }, "d");
    const xs = Array.from({ length: 10_000 }, () => sample(d, r)).sort((a, b) => a - b);
    expect(xs[0]).toBe(4);
    expect(xs.at(-1)).toBe(250);
    expect(Math.abs((xs[5000] as number) - 64)).toBeLessThanOrEqual(4);
    expect(mean(d)).toBeCloseTo(64 * Math.exp(0.5), 6);
  });
});
