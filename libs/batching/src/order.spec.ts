import { describe, expect, it } from "vitest";
import type { BatchCandidate } from "./candidate.js";
import { compareCandidates } from "./order.js";

function c(priority: number, deadlineUnixMs: number, arrival: number): BatchCandidate {
  return { inputs: 1, maxInputTokens: 1, totalTokens: 1, priority, deadlineUnixMs, arrival };
}

describe("compareCandidates", () => {
  it.each([
    { name: "higher priority first", a: c(2, 0, 9), b: c(1, 100, 1), sign: -1 },
    { name: "lower priority later", a: c(1, 100, 1), b: c(2, 0, 9), sign: 1 },
    { name: "earlier deadline first", a: c(0, 100, 9), b: c(0, 200, 1), sign: -1 },
    { name: "no deadline after any deadline", a: c(0, 0, 1), b: c(0, 10 ** 15, 9), sign: 1 },
    { name: "earlier arrival breaks deadline tie", a: c(0, 100, 1), b: c(0, 100, 2), sign: -1 },
    { name: "earlier arrival breaks no-deadline tie", a: c(0, 0, 3), b: c(0, 0, 2), sign: 1 },
    { name: "identical keys are equal", a: c(1, 5, 5), b: c(1, 5, 5), sign: 0 },
  ])("$name", ({ a, b, sign }) => {
    expect(Math.sign(compareCandidates(a, b))).toBe(sign);
  });
});
