import { describe, expect, it } from "vitest";
import type { BatchCandidate } from "./candidate.js";
import { paddedTokens } from "./padded-tokens.js";

function item(inputs: number, maxInputTokens: number): BatchCandidate {
  return {
    inputs,
    maxInputTokens,
    totalTokens: inputs * maxInputTokens,
    priority: 0,
    deadlineUnixMs: 0,
    arrival: 0,
  };
}

describe("paddedTokens", () => {
  it.each([
    { name: "empty batch", batch: [], expected: 0 },
    { name: "one item", batch: [item(3, 10)], expected: 30 },
    { name: "pads short items to the longest", batch: [item(1, 100), item(4, 5)], expected: 500 },
    { name: "longest last", batch: [item(2, 5), item(2, 7)], expected: 28 },
  ])("$name", ({ batch, expected }) => {
    expect(paddedTokens(batch)).toBe(expected);
  });
});
