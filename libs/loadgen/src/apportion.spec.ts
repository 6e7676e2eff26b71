import { describe, expect, it } from "vitest";
import { apportion } from "./apportion.js";
import { zipfWeights } from "./random.js";

describe("apportion", () => {
  it("splits in proportion, at least one each, summing to the total", () => {
    const shares = apportion(zipfWeights(8, 1), 32);
    expect(shares.reduce((a, b) => a + b, 0)).toBe(32);
    expect(shares).toEqual([...shares].sort((a, b) => b - a));
    expect(Math.min(...shares)).toBeGreaterThanOrEqual(1);
    expect(shares[0]).toBeGreaterThan(3 * (shares[7] ?? 0));
  });

  it("gives equal weights equal shares, the remainder to the first", () => {
    expect(apportion([1, 1, 1], 7)).toEqual([3, 2, 2]);
    expect(apportion([5, 1], 2)).toEqual([1, 1]);
  });

  it("keeps a placement of whole units that already sums to the total", () => {
    const placement = [13, 5, 3, 3, 2, 2, 2, 2];
    expect(apportion(placement, 32)).toEqual(placement);
    expect(apportion(apportion(zipfWeights(8, 1), 32), 32)).toEqual(
      apportion(zipfWeights(8, 1), 32),
    );
    // Whole units for another total are still split in proportion.
    expect(apportion([2, 1, 1], 8)).toEqual([4, 2, 2]);
  });

  it.each([
    [[1, 1], 1, /cannot give each/],
    [[1, 0], 4, /positive/],
    [[1, Number.NaN], 4, /positive/],
    [[1], 2.5, /cannot give each/],
  ])("refuses %j over %j", (weights, total, message) => {
    expect(() => apportion(weights, total)).toThrow(message);
  });
});
