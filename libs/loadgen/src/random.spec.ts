import { describe, expect, it } from "vitest";
import { cumulative, Random, zipfWeights } from "./random.js";

describe("Random", () => {
  it("repeats its sequence for a seed and differs between seeds", () => {
    const draw = (seed: number): number[] => {
      const r = new Random(seed);
      return Array.from({ length: 5 }, () => r.next());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });

  it("draws uniformly in [0, 1)", () => {
    const r = new Random(1);
    const xs = Array.from({ length: 20_000 }, () => r.next());
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean).toBeCloseTo(0.5, 1);
    // Ten equal bins each hold about a tenth.
    const bins = new Array<number>(10).fill(0);
    for (const x of xs) bins[Math.floor(x * 10)] = (bins[Math.floor(x * 10)] ?? 0) + 1;
    for (const b of bins) expect(Math.abs(b / xs.length - 0.1)).toBeLessThan(0.01);
  });

  it("gives exponential gaps of mean 1 / rate", () => {
    const r = new Random(2);
    const gaps = Array.from({ length: 20_000 }, () => r.exponential(50));
    expect(gaps.reduce((a, b) => a + b, 0) / gaps.length).toBeCloseTo(0.02, 3);
  });

  it("picks indices in proportion to their weights", () => {
    const r = new Random(3);
    const counts = [0, 0, 0];
    const c = cumulative([1, 2, 7]);
    for (let i = 0; i < 30_000; i++) {
      const k = r.pick(c);
      counts[k] = (counts[k] ?? 0) + 1;
    }
    expect(counts.map((n) => Math.round((n / 30_000) * 10))).toEqual([1, 2, 7]);
  });

  it("refuses a seed that is not an integer", () => {
    expect(() => new Random(1.5)).toThrow(/integer/);
  });
});

describe("zipfWeights", () => {
  it("weighs rank k as 1 / k^s", () => {
    expect(zipfWeights(4, 1)).toEqual([1, 1 / 2, 1 / 3, 1 / 4]);
    expect(zipfWeights(3, 0)).toEqual([1, 1, 1]);
  });
});
