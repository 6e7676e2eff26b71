import { describe, expect, it } from "vitest";
import { ShapeEstimate, textShape } from "./shape-estimate.js";

describe("textShape", () => {
  it("counts ASCII characters apart from the rest", () => {
    expect(textShape("abcdefgh")).toEqual({ ascii: 8, other: 0 });
    expect(textShape("ab日本語")).toEqual({ ascii: 2, other: 3 });
    expect(textShape("")).toEqual({ ascii: 0, other: 0 });
  });
});

describe("ShapeEstimate", () => {
  it("starts at four ASCII characters or one other character a token, plus two special ones", () => {
    const estimate = new ShapeEstimate();
    expect(estimate.count("")).toBe(2);
    expect(estimate.count("abcdefgh")).toBe(2 + 2);
    expect(estimate.count("日本語")).toBe(2 + 3);
    expect(estimate.count("abcde")).toBe(2 + 2);
  });

  it("fits each kind of character's rate to the real counts", () => {
    const estimate = new ShapeEstimate();
    // A tokenizer at one token per 2 ASCII characters and one per 2 others.
    for (let i = 0; i < 200; i++) {
      estimate.observe("x".repeat(40), 2 + 20, false);
      estimate.observe("日".repeat(40), 2 + 20, false);
      estimate.observe("x".repeat(20) + "日".repeat(20), 2 + 20, false);
    }
    expect(estimate.rates.ascii).toBeCloseTo(0.5, 2);
    expect(estimate.rates.other).toBeCloseTo(0.5, 2);
    expect(estimate.count("x".repeat(400))).toBeCloseTo(2 + 200, -1);
  });

  it("keeps the prior for a kind of character it has never seen", () => {
    const estimate = new ShapeEstimate();
    for (let i = 0; i < 100; i++) estimate.observe("x".repeat(40), 2 + 20, false);
    expect(estimate.rates.ascii).toBeCloseTo(0.5, 1);
    expect(estimate.rates.other).toBeCloseTo(1, 2);
  });

  it("learns nothing from truncated inputs, empty ones, or impossible counts", () => {
    const estimate = new ShapeEstimate();
    estimate.observe("x".repeat(4000), 256, true);
    estimate.observe("", 2, false);
    estimate.observe("x".repeat(40), 2 + 10_000, false);
    expect(estimate.observed).toBe(0);
    expect(estimate.rates).toEqual({ ascii: 0.25, other: 1 });
  });

  it("follows a change of traffic gradually, not from one odd input", () => {
    const estimate = new ShapeEstimate();
    for (let i = 0; i < 2000; i++) estimate.observe("x".repeat(40), 2 + 10, false);
    estimate.observe("x".repeat(40), 2 + 40, false);
    expect(estimate.rates.ascii).toBeGreaterThan(0.25);
    expect(estimate.rates.ascii).toBeLessThan(0.252);
  });
});
