import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BatchCandidate } from "./candidate.js";
import { compileLatencyTargetOptions, latencyTargetMicros } from "./latency-target.js";

const NOW = 1_700_000_000_000;

function due(deadlineUnixMs: number): BatchCandidate {
  return { inputs: 1, maxInputTokens: 8, totalTokens: 8, priority: 0, deadlineUnixMs, arrival: 0 };
}

/** No margins, so expected targets are plain arithmetic. */
const BARE = compileLatencyTargetOptions({
  maxTargetMicros: 50_000,
  marginFraction: 0,
  marginMicros: 0,
});

describe("compileLatencyTargetOptions", () => {
  it("fills defaults and freezes", () => {
    const compiled = compileLatencyTargetOptions();
    expect(compiled).toEqual({ maxTargetMicros: 50_000, marginFraction: 0.2, marginMicros: 2_000 });
    expect(Object.isFrozen(compiled)).toBe(true);
  });

  it.each([
    {
      options: { maxTargetMicros: 0 },
      message: "maxTargetMicros must be positive and finite, got 0",
    },
    {
      options: { maxTargetMicros: Infinity },
      message: "maxTargetMicros must be positive and finite",
    },
    { options: { marginFraction: 1 }, message: "marginFraction must be in [0, 1), got 1" },
    { options: { marginFraction: -0.1 }, message: "marginFraction must be in [0, 1), got -0.1" },
    {
      options: { marginFraction: Number.NaN },
      message: "marginFraction must be in [0, 1), got NaN",
    },
    {
      options: { marginMicros: -1 },
      message: "marginMicros must be finite and not negative, got -1",
    },
  ])("rejects $options", ({ options, message }) => {
    expect(() => compileLatencyTargetOptions(options)).toThrow(RangeError);
    expect(() => compileLatencyTargetOptions(options)).toThrow(message);
  });
});

describe("latencyTargetMicros", () => {
  it.each([
    { name: "no candidates", candidates: [], target: BARE, expected: 50_000 },
    { name: "no deadlines (0)", candidates: [due(0), due(0)], target: BARE, expected: 50_000 },
    {
      name: "earliest deadline wins",
      candidates: [due(NOW + 30), due(NOW + 10), due(0)],
      target: BARE,
      expected: 10_000,
    },
    {
      name: "a far deadline is capped at the maximum",
      candidates: [due(NOW + 60_000)],
      target: BARE,
      expected: 50_000,
    },
    {
      name: "past deadlines are ignored (that work expires)",
      candidates: [due(NOW - 5), due(NOW + 20)],
      target: BARE,
      expected: 20_000,
    },
    {
      name: "a deadline of exactly now is past",
      candidates: [due(NOW)],
      target: BARE,
      expected: 50_000,
    },
    {
      name: "fractional margin",
      candidates: [due(NOW + 10)],
      target: compileLatencyTargetOptions({ marginFraction: 0.25, marginMicros: 0 }),
      expected: 7_500,
    },
    {
      name: "absolute margin after the fraction",
      candidates: [due(NOW + 10)],
      target: compileLatencyTargetOptions({ marginFraction: 0.2, marginMicros: 2_000 }),
      expected: 6_000,
    },
    {
      name: "margins larger than the time left give 0",
      candidates: [due(NOW + 1)],
      target: compileLatencyTargetOptions(),
      expected: 0,
    },
  ])("$name", ({ candidates, target, expected }) => {
    expect(latencyTargetMicros(candidates, NOW, target)).toBe(expected);
  });
});

const deadlineArb = fc.oneof(fc.constant(0), fc.integer({ min: NOW - 1_000, max: NOW + 100_000 }));
const targetArb = fc
  .record({
    maxTargetMicros: fc.integer({ min: 1, max: 10_000_000 }),
    marginFraction: fc.double({ min: 0, max: 0.99, noNaN: true }),
    marginMicros: fc.integer({ min: 0, max: 100_000 }),
  })
  .map((options) => compileLatencyTargetOptions(options));

describe("latencyTargetMicros properties", () => {
  it("stays within [0, maxTargetMicros], and another candidate never raises it", () => {
    fc.assert(
      fc.property(
        fc.array(deadlineArb, { maxLength: 20 }),
        deadlineArb,
        targetArb,
        (deadlines, extra, target) => {
          const candidates = deadlines.map(due);
          const before = latencyTargetMicros(candidates, NOW, target);
          expect(before).toBeGreaterThanOrEqual(0);
          expect(before).toBeLessThanOrEqual(target.maxTargetMicros);
          expect(latencyTargetMicros([...candidates, due(extra)], NOW, target)).toBeLessThanOrEqual(
            before,
          );
        },
      ),
    );
  });

  it("leaves at least the margins before the earliest live deadline", () => {
    fc.assert(
      fc.property(
        fc.array(deadlineArb, { minLength: 1, maxLength: 20 }),
        targetArb,
        (deadlines, target) => {
          const live = deadlines.filter((d) => d > NOW);
          fc.pre(live.length > 0);
          const micros = latencyTargetMicros(deadlines.map(due), NOW, target);
          const left = (Math.min(...live) - NOW) * 1_000;
          if (micros > 0) {
            expect(micros + target.marginMicros + left * target.marginFraction).toBeLessThanOrEqual(
              left * (1 + 1e-12),
            );
          }
        },
      ),
    );
  });
});
