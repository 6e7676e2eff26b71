import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BatchBudget } from "./budget.js";
import { maxPaddedTokensWithin } from "./budget-from-latency.js";
import { createLatencyModel, type LatencyModel, type LatencyTerms } from "./latency-model.js";

/** An unfitted model predicts with its prior exactly, which makes expected budgets easy to state. */
function modelWith(prior: LatencyTerms): LatencyModel {
  return createLatencyModel({ prior });
}

const TERMS: LatencyTerms = { fixedUs: 1000, perSequenceUs: 10, perPaddedTokenUs: 2 };
const CEILING: BatchBudget = { maxPaddedTokens: 16384, maxInputs: 1024 };

describe("maxPaddedTokensWithin", () => {
  it.each([
    {
      name: "solves the model for the tokens left after fixed and per-row costs",
      terms: TERMS,
      request: { targetMicros: 1000 + 10 * 4 + 2 * 100, sequences: 4 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 100 },
    },
    {
      name: "rounds down to whole tokens",
      terms: TERMS,
      request: { targetMicros: 1000 + 10 * 4 + 2 * 100 + 1.9, sequences: 4 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 100 },
    },
    {
      name: "caps at the hard ceiling",
      terms: TERMS,
      request: { targetMicros: 1e9, sequences: 4 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 16384 },
    },
    {
      name: "free tokens give the ceiling",
      terms: { ...TERMS, perPaddedTokenUs: 0 },
      request: { targetMicros: 1040, sequences: 4 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 16384 },
    },
    {
      name: "exactly one token a row still fits",
      terms: TERMS,
      request: { targetMicros: 1000 + 10 * 4 + 2 * 4, sequences: 4 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 4 },
    },
    {
      name: "one row of one token just fits",
      terms: TERMS,
      request: { targetMicros: 1012, sequences: 1 },
      ceiling: CEILING,
      expected: { fits: true, maxPaddedTokens: 1 },
    },
    {
      name: "nothing fits when even one-token rows are too slow",
      terms: TERMS,
      request: { targetMicros: 1011.9, sequences: 1 },
      ceiling: CEILING,
      expected: { fits: false, minimumMicros: 1012 },
    },
    {
      name: "a zero target fits nothing",
      terms: TERMS,
      request: { targetMicros: 0, sequences: 8 },
      ceiling: CEILING,
      expected: { fits: false, minimumMicros: 1000 + 80 + 16 },
    },
    {
      name: "rows beyond the ceiling's maxInputs are capped",
      terms: TERMS,
      request: { targetMicros: 1000 + 10 * 8 + 2 * 50, sequences: 500 },
      ceiling: { maxPaddedTokens: 16384, maxInputs: 8 },
      expected: { fits: true, maxPaddedTokens: 50 },
    },
    {
      name: "a ceiling below one token a row is still the cap",
      terms: TERMS,
      request: { targetMicros: 1e6, sequences: 64 },
      ceiling: { maxPaddedTokens: 32, maxInputs: 1024 },
      expected: { fits: true, maxPaddedTokens: 32 },
    },
  ])("$name", ({ terms, request, ceiling, expected }) => {
    expect(maxPaddedTokensWithin(modelWith(terms), request, ceiling)).toEqual(expected);
  });

  it("uses the fitted terms once the model has learned them", () => {
    const model = createLatencyModel({
      prior: { fixedUs: 0, perSequenceUs: 0, perPaddedTokenUs: 0 },
    });
    for (let i = 0; i < 32; i += 1) {
      const sequences = 1 + (i % 8);
      const paddedTokens = sequences * (16 + 37 * i);
      model.observe({ sequences, paddedTokens, micros: 1000 + 10 * sequences + 2 * paddedTokens });
    }
    expect(model.coefficients.fitted).toBe(true);
    // 1241 µs leaves room for 100.5 tokens, so float error in the fit cannot change the answer.
    const budget = maxPaddedTokensWithin(model, { targetMicros: 1241, sequences: 4 }, CEILING);
    expect(budget).toEqual({ fits: true, maxPaddedTokens: 100 });
  });

  it.each([
    {
      request: { targetMicros: 1000, sequences: 0 },
      message: "sequences must be a positive integer",
    },
    {
      request: { targetMicros: 1000, sequences: 1.5 },
      message: "sequences must be a positive integer",
    },
    {
      request: { targetMicros: Number.NaN, sequences: 1 },
      message: "targetMicros must be a number",
    },
  ])("rejects $request", ({ request, message }) => {
    expect(() => maxPaddedTokensWithin(modelWith(TERMS), request, CEILING)).toThrow(RangeError);
    expect(() => maxPaddedTokensWithin(modelWith(TERMS), request, CEILING)).toThrow(message);
  });
});

const termsArb = fc.record({
  fixedUs: fc.double({ min: 0, max: 1e5, noNaN: true }),
  perSequenceUs: fc.double({ min: 0, max: 1e3, noNaN: true }),
  perPaddedTokenUs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 100, noNaN: true })),
});
const ceilingArb = fc.record({
  maxPaddedTokens: fc.integer({ min: 1, max: 65_536 }),
  maxInputs: fc.integer({ min: 1, max: 2048 }),
});
const targetArb = fc.double({ min: 0, max: 1e7, noNaN: true });
const sequencesArb = fc.integer({ min: 1, max: 4096 });

describe("maxPaddedTokensWithin properties", () => {
  it("is monotone in the target", () => {
    fc.assert(
      fc.property(
        termsArb,
        ceilingArb,
        sequencesArb,
        targetArb,
        targetArb,
        (terms, ceiling, sequences, t1, t2) => {
          const model = modelWith(terms);
          const [low, high] = t1 <= t2 ? [t1, t2] : [t2, t1];
          const a = maxPaddedTokensWithin(model, { targetMicros: low, sequences }, ceiling);
          const b = maxPaddedTokensWithin(model, { targetMicros: high, sequences }, ceiling);
          if (a.fits) {
            expect(b.fits).toBe(true);
            if (b.fits) expect(b.maxPaddedTokens).toBeGreaterThanOrEqual(a.maxPaddedTokens);
          }
        },
      ),
    );
  });

  it("fits the target, never exceeds the ceiling, and is the largest such budget", () => {
    fc.assert(
      fc.property(
        termsArb,
        ceilingArb,
        sequencesArb,
        targetArb,
        (terms, ceiling, requested, targetMicros) => {
          const model = modelWith(terms);
          const result = maxPaddedTokensWithin(
            model,
            { targetMicros, sequences: requested },
            ceiling,
          );
          const sequences = Math.min(requested, ceiling.maxInputs);
          if (!result.fits) {
            expect(result.minimumMicros).toBe(
              model.predict({ sequences, paddedTokens: sequences }),
            );
            expect(result.minimumMicros).toBeGreaterThan(targetMicros);
            return;
          }
          const tokens = result.maxPaddedTokens;
          expect(Number.isSafeInteger(tokens)).toBe(true);
          expect(tokens).toBeLessThanOrEqual(ceiling.maxPaddedTokens);
          expect(tokens).toBeGreaterThanOrEqual(Math.min(sequences, ceiling.maxPaddedTokens));
          expect(model.predict({ sequences, paddedTokens: tokens })).toBeLessThanOrEqual(
            targetMicros,
          );
          if (tokens < ceiling.maxPaddedTokens) {
            expect(model.predict({ sequences, paddedTokens: tokens + 1 })).toBeGreaterThan(
              targetMicros,
            );
          }
        },
      ),
    );
  });
});
