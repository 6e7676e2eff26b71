import { describe, expect, it } from "vitest";
import { compilePopularity, epochAt, epochEnd, weightsIn } from "./popularity.js";
import { WorkloadError } from "./workload-error.js";

describe("popularity", () => {
  it("is equal without zipf and Zipf with it, and never moves without drift", () => {
    expect(weightsIn(compilePopularity(undefined, 3, "p", 1), 5)).toEqual([1, 1, 1]);
    const p = compilePopularity({ zipf: 1 }, 4, "p", 1);
    expect(weightsIn(p, 0)).toEqual([1, 1 / 2, 1 / 3, 1 / 4]);
    expect(epochAt(p, 1e6)).toBe(0);
    expect(epochEnd(p, 0)).toBe(Infinity);
  });

  it("rotates the ranks along the models every period", () => {
    const p = compilePopularity({ zipf: 1, drift: { every_seconds: 10, rotate: 1 } }, 4, "p", 1);
    expect(epochAt(p, 9.9)).toBe(0);
    expect(epochAt(p, 25)).toBe(2);
    expect(epochEnd(p, 2)).toBe(30);
    // The hot spot walks from model 0 to model 1, then 2.
    expect(weightsIn(p, 1)).toEqual([1 / 4, 1, 1 / 2, 1 / 3]);
    expect(weightsIn(p, 2)).toEqual([1 / 3, 1 / 4, 1, 1 / 2]);
    expect(weightsIn(p, 4)).toEqual(weightsIn(p, 0));
  });

  it("deals the ranks anew each period, the same for the same seed", () => {
    const p = compilePopularity(
      { zipf: 1, drift: { every_seconds: 5, shuffle: true } },
      16,
      "p",
      7,
    );
    const sorted = (w: number[]): number[] => [...w].sort((a, b) => b - a);
    const hottest = new Set<number>();
    for (let e = 0; e < 20; e++) {
      const w = weightsIn(p, e);
      // The skew is kept; only who has it changes.
      expect(sorted(w)).toEqual(sorted(weightsIn(p, 0)));
      hottest.add(w.indexOf(1));
    }
    expect(hottest.size).toBeGreaterThan(5);
    expect(weightsIn(p, 3)).toEqual(
      weightsIn(
        compilePopularity({ zipf: 1, drift: { every_seconds: 5, shuffle: true } }, 16, "p", 7),
        3,
      ),
    );
  });

  it.each([
    [{ zipf: 1, drift: { every_seconds: 10 } }, "p.drift must have one of rotate"],
    [{ drift: { every_seconds: 10, rotate: 1, shuffle: true } }, "p.drift must have one of rotate"],
    [{ drift: { every_seconds: 0, rotate: 1 } }, "p.drift.every_seconds must be a number"],
    [{ drift: { every_seconds: 5, rotate: 1.5 } }, "p.drift.rotate must be an integer"],
    [{ drift: { every_seconds: 5, rotate: 4 } }, "p.drift.rotate must be a number in 1..=3"],
    [{ drift: { every_seconds: 5, shuffle: "yes" } }, "p.drift.shuffle must be true"],
    [{ drift: { every_seconds: 5, walk: 1 } }, "p.drift: unknown key walk"],
  ])("refuses %j", (raw, message) => {
    expect(() => compilePopularity(raw, 4, "p", 1)).toThrow(WorkloadError);
    expect(() => compilePopularity(raw, 4, "p", 1)).toThrow(message);
  });
});
