import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lengthBucket, planParts } from "./plan.js";

const limits = { maxInputTokens: 256, maxPaddedTokens: 1024, maxInputs: 8 };

describe("planParts", () => {
  it.each([
    { name: "one short input", counts: [5], parts: [[0, 1, 5, 5]] },
    {
      name: "splits on input count",
      counts: Array<number>(10).fill(3),
      parts: [
        [0, 8, 3, 24],
        [8, 2, 3, 6],
      ],
    },
    {
      name: "splits on padded cost",
      counts: [256, 256, 256, 256, 256],
      parts: [
        [0, 4, 256, 1024],
        [4, 1, 256, 256],
      ],
    },
    { name: "truncates long inputs", counts: [900, 4], parts: [[0, 2, 256, 260]] },
  ])("$name", ({ counts, parts }) => {
    const plan = planParts(counts, limits);
    expect(
      plan.parts.map((p) => [p.firstInput, p.inputs, p.maxInputTokens, p.totalTokens]),
    ).toEqual(parts);
  });

  it("closes a part before its inputs' bytes pass the bound, and lets one big input stand alone", () => {
    const plan = planParts([3, 3, 3, 3, 3], { ...limits, maxBytes: 100 }, [40, 40, 40, 500, 10]);
    expect(plan.parts.map((p) => [p.firstInput, p.inputs])).toEqual([
      [0, 2],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
  });

  it("reports inputs over the model's limit", () => {
    expect(planParts([3, 257, 256, 1000], limits).overLength).toEqual([1, 3]);
  });

  it("covers every input exactly once, in order, within limits", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 600 }), { minLength: 1, maxLength: 200 }),
        (counts) => {
          const plan = planParts(counts, limits);
          let next = 0;
          for (const part of plan.parts) {
            expect(part.firstInput).toBe(next);
            next += part.inputs;
            expect(part.inputs).toBeLessThanOrEqual(limits.maxInputs);
            expect(part.inputs * part.maxInputTokens).toBeLessThanOrEqual(limits.maxPaddedTokens);
          }
          expect(next).toBe(counts.length);
          const truncated = counts.map((c) => Math.min(c, limits.maxInputTokens));
          expect(plan.totalTokens).toBe(truncated.reduce((a, b) => a + b, 0));
        },
      ),
    );
  });
});

describe("lengthBucket", () => {
  it.each([
    [1, 16],
    [16, 16],
    [17, 32],
    [256, 256],
    [300, 256],
  ])("%i tokens → bucket %i", (tokens, bucket) => {
    expect(lengthBucket(tokens, [16, 32, 64, 128, 256])).toBe(bucket);
  });
});
