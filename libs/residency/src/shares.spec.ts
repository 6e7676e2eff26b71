import { describe, expect, it } from "vitest";
import { memoryShares, Recommendations } from "./shares.js";

const GB = 1e9;

describe("memoryShares", () => {
  it("divides the memory left after the minimum by arrival rate, in rounded copies", () => {
    // 20 GB, 2 GB models, one copy each: 14 GB spare = 7 copies, 3 : 1 : 0 → 5.25 and 1.75,
    // rounded to 5 and 2.
    const shares = memoryShares(
      [
        { model: "a", bytes: 2 * GB, rate: 3 },
        { model: "b", bytes: 2 * GB, rate: 1 },
        { model: "c", bytes: 2 * GB, rate: 0 },
      ],
      20 * GB,
      10,
      1,
    );
    expect(Object.fromEntries(shares)).toEqual({ a: 6, b: 3, c: 1 });
    // A sliver of demand does not earn a copy because memory is left over.
    const sliver = memoryShares(
      [
        { model: "a", bytes: 2 * GB, rate: 100 },
        { model: "b", bytes: 2 * GB, rate: 1 },
      ],
      20 * GB,
      3,
      1,
    );
    expect(Object.fromEntries(sliver)).toEqual({ a: 3, b: 1 });
  });

  it("gives at most one copy per accelerator and the minimum without any demand", () => {
    const a = { model: "a", bytes: 1 * GB, rate: 5 };
    expect(memoryShares([a], 40 * GB, 4, 1).get("a")).toBe(4);
    expect(memoryShares([{ ...a, rate: 0 }], 40 * GB, 4, 1).get("a")).toBe(1);
  });
});

describe("Recommendations", () => {
  it("holds the highest recommendation of the window", () => {
    const recs = new Recommendations();
    expect(recs.stabilized("a", 3, 0, 10_000)).toBe(3);
    expect(recs.stabilized("a", 1, 5_000, 10_000)).toBe(3);
    expect(recs.stabilized("a", 1, 10_001, 10_000)).toBe(1);
  });
});
