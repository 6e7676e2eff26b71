import { describe, expect, it } from "vitest";
import { compileArrivals, renewalTimes } from "./arrivals.js";
import { Random } from "./random.js";
import { WorkloadError } from "./workload-error.js";

/** Coefficient of variation of the gaps between `times`. */
function gapCv(times: readonly number[]): number {
  const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const variance = gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length;
  return Math.sqrt(variance) / mean;
}

describe("Random.gamma", () => {
  it.each([0.0625, 0.25, 1, 4])("has mean 1 and CV 1/sqrt(shape) for shape %d", (shape) => {
    const r = new Random(11);
    const xs = Array.from({ length: 40_000 }, () => r.gamma(shape));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length);
    expect(mean).toBeCloseTo(1, 1);
    expect(sd / mean).toBeGreaterThan(0.85 / Math.sqrt(shape));
    expect(sd / mean).toBeLessThan(1.15 / Math.sqrt(shape));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
  });
});

describe("renewalTimes", () => {
  it("keeps the rate and the CV it is given", () => {
    for (const cv of [1, 4]) {
      const times = renewalTimes([{ from: 0, to: 2000, rate: 20 }], cv, new Random(3));
      expect(times.length / 2000).toBeGreaterThan(20 * (cv === 1 ? 0.95 : 0.8));
      expect(times.length / 2000).toBeLessThan(20 * (cv === 1 ? 1.05 : 1.2));
      expect(gapCv(times)).toBeGreaterThan(cv * 0.8);
      expect(gapCv(times)).toBeLessThan(cv * 1.2);
    }
  });

  it("follows a rate that changes, and a zero rate has no arrivals", () => {
    const times = renewalTimes(
      [
        { from: 0, to: 100, rate: 10 },
        { from: 100, to: 200, rate: 0 },
        { from: 200, to: 300, rate: 40 },
      ],
      1,
      new Random(5),
    );
    const inside = (a: number, b: number): number => times.filter((t) => t >= a && t < b).length;
    expect(inside(100, 200)).toBe(0);
    expect(inside(200, 300) / inside(0, 100)).toBeGreaterThan(3);
    expect(inside(200, 300) / inside(0, 100)).toBeLessThan(5);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});

describe("compileArrivals", () => {
  it("reads poisson and gamma", () => {
    expect(compileArrivals(undefined, "a")).toEqual({ kind: "poisson" });
    expect(compileArrivals("poisson", "a")).toEqual({ kind: "poisson" });
    expect(compileArrivals({ gamma: { cv: 4 } }, "a")).toEqual({ kind: "gamma", cv: 4 });
  });

  it.each([
    ["bursty", 'a must be "poisson" or {"gamma": {"cv": c}}, got "bursty"'],
    [{ gamma: { cv: 0 } }, "a.gamma.cv must be a number in 0.1..=20, got 0"],
    [{ gamma: {} }, "a.gamma.cv must be a number"],
    [{ mmpp: {} }, "a: unknown key mmpp"],
  ])("refuses %j", (raw, message) => {
    expect(() => compileArrivals(raw, "a")).toThrow(WorkloadError);
    expect(() => compileArrivals(raw, "a")).toThrow(message);
  });
});
