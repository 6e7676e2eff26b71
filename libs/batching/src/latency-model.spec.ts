import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compileLatencyModelOptions,
  createLatencyModel,
  DEFAULT_LATENCY_PRIOR,
  type LatencyModel,
  type LatencyObservation,
  type LatencyTerms,
} from "./latency-model.js";

const TRUTH: LatencyTerms = { fixedUs: 800, perSequenceUs: 30, perPaddedTokenUs: 4 };

/** Deterministic pseudo-random numbers in [0, 1), so noisy tests are reproducible. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function time(terms: LatencyTerms, sequences: number, paddedTokens: number): number {
  return terms.fixedUs + terms.perSequenceUs * sequences + terms.perPaddedTokenUs * paddedTokens;
}

/** A varied design: rows 1..64, longest row 8..512, as a worker under mixed load sees. */
function design(count: number, seed: number): { sequences: number; paddedTokens: number }[] {
  const random = lcg(seed);
  return Array.from({ length: count }, () => {
    const sequences = 1 + Math.floor(random() * 64);
    const longest = 8 + Math.floor(random() * 505);
    return { sequences, paddedTokens: sequences * longest };
  });
}

function feed(
  model: LatencyModel,
  terms: LatencyTerms,
  shapes: readonly { sequences: number; paddedTokens: number }[],
  noise: () => number = () => 1,
): void {
  for (const shape of shapes) {
    model.observe({ ...shape, micros: time(terms, shape.sequences, shape.paddedTokens) * noise() });
  }
}

function expectClose(actual: LatencyTerms, expected: LatencyTerms, relative: number): void {
  for (const key of ["fixedUs", "perSequenceUs", "perPaddedTokenUs"] as const) {
    expect(Math.abs(actual[key] - expected[key])).toBeLessThanOrEqual(
      (1 + expected[key]) * relative,
    );
  }
}

function residual(observations: readonly LatencyObservation[], terms: LatencyTerms): number {
  return observations.reduce(
    (sum, o) => sum + (o.micros - time(terms, o.sequences, o.paddedTokens)) ** 2,
    0,
  );
}

describe("compileLatencyModelOptions", () => {
  it("fills defaults", () => {
    expect(compileLatencyModelOptions()).toEqual({
      window: 256,
      minSamples: 16,
      prior: DEFAULT_LATENCY_PRIOR,
      outlierFactor: 3,
      outlierRunLength: 8,
    });
  });

  it("keeps given values and freezes the result", () => {
    const prior = { fixedUs: 1, perSequenceUs: 2, perPaddedTokenUs: 3 };
    const compiled = compileLatencyModelOptions({
      window: 10,
      minSamples: 3,
      prior,
      outlierFactor: Infinity,
      outlierRunLength: 10,
    });
    expect(compiled).toEqual({
      window: 10,
      minSamples: 3,
      prior,
      outlierFactor: Infinity,
      outlierRunLength: 10,
    });
    expect(Object.isFrozen(compiled)).toBe(true);
    expect(Object.isFrozen(compiled.prior)).toBe(true);
  });

  it.each([
    { options: { window: 0 }, message: "window must be a positive integer, got 0" },
    { options: { window: 2.5 }, message: "window must be a positive integer, got 2.5" },
    { options: { minSamples: 2 }, message: "minSamples must be between 3 and window" },
    { options: { window: 8, minSamples: 9 }, message: "minSamples must be between 3 and window" },
    { options: { outlierRunLength: 0 }, message: "outlierRunLength must be a positive integer" },
    {
      options: { window: 16, outlierRunLength: 17 },
      message: "outlierRunLength must not exceed window",
    },
    { options: { outlierFactor: 1 }, message: "outlierFactor must be above 1, got 1" },
    { options: { outlierFactor: Number.NaN }, message: "outlierFactor must be above 1, got NaN" },
    {
      options: { prior: { ...TRUTH, perPaddedTokenUs: -1 } },
      message: "prior.perPaddedTokenUs must be finite and not negative, got -1",
    },
    {
      options: { prior: { ...TRUTH, fixedUs: Infinity } },
      message: "prior.fixedUs must be finite and not negative, got Infinity",
    },
  ])("rejects $options", ({ options, message }) => {
    expect(() => compileLatencyModelOptions(options)).toThrow(RangeError);
    expect(() => compileLatencyModelOptions(options)).toThrow(message);
  });
});

describe("LatencyModel fit", () => {
  it("starts on the prior", () => {
    const model = createLatencyModel({ prior: TRUTH });
    expect(model.coefficients).toEqual({ ...TRUTH, samples: 0, fitted: false });
    expect(model.predict({ sequences: 2, paddedTokens: 100 })).toBe(800 + 60 + 400);
  });

  it.each([
    { name: "all three terms", truth: TRUTH },
    { name: "no per-row term", truth: { fixedUs: 500, perSequenceUs: 0, perPaddedTokenUs: 2 } },
    { name: "no fixed term", truth: { fixedUs: 0, perSequenceUs: 120, perPaddedTokenUs: 0.5 } },
    { name: "tokens free", truth: { fixedUs: 3000, perSequenceUs: 40, perPaddedTokenUs: 0 } },
  ])("recovers noiseless coefficients: $name", ({ truth }) => {
    const model = createLatencyModel();
    feed(model, truth, design(100, 7));
    const c = model.coefficients;
    expect(c.fitted).toBe(true);
    expect(c.samples).toBe(100);
    for (const key of ["fixedUs", "perSequenceUs", "perPaddedTokenUs"] as const) {
      expect(Math.abs(c[key] - truth[key])).toBeLessThanOrEqual(1e-6 * (1 + truth[key]));
    }
  });

  it.each([{ seed: 1 }, { seed: 2 }, { seed: 3 }])(
    "recovers coefficients from ±5% noise (seed $seed)",
    ({ seed }) => {
      const model = createLatencyModel();
      const random = lcg(seed * 1000);
      feed(model, TRUTH, design(256, seed), () => 0.95 + 0.1 * random());
      const c = model.coefficients;
      expect(c.fitted).toBe(true);
      expect(Math.abs(c.perPaddedTokenUs - TRUTH.perPaddedTokenUs)).toBeLessThan(0.05 * 4);
      expect(Math.abs(c.perSequenceUs - TRUTH.perSequenceUs)).toBeLessThan(0.5 * 30);
      expect(Math.abs(c.fixedUs - TRUTH.fixedUs)).toBeLessThan(0.5 * 800);
      // Multiplicative noise makes the big batches dominate least squares, so the fixed term is
      // known to about ±50%; predictions are within the noise plus that.
      for (const shape of design(20, seed + 99)) {
        const truth = time(TRUTH, shape.sequences, shape.paddedTokens);
        expect(Math.abs(model.predict(shape) - truth)).toBeLessThan(
          0.05 * truth + 0.5 * TRUTH.fixedUs,
        );
      }
    },
  );

  it("clamps a term the data would make negative, and refits the others without it", () => {
    // Per-row cost -20 µs is impossible; the constrained optimum sets it to 0 and the fixed and
    // per-token terms absorb what they can.
    const shapes = design(128, 11);
    const observations = shapes.map((s) => ({
      ...s,
      micros: 5000 - 20 * s.sequences + 3 * s.paddedTokens,
    }));
    const model = createLatencyModel();
    for (const o of observations) model.observe(o);
    const c = model.coefficients;
    expect(c.perSequenceUs).toBe(0);
    expect(c.perPaddedTokenUs).toBeGreaterThan(0);
    // Naive clipping of the unconstrained solution (5000, -20, 3) → (5000, 0, 3) fits worse.
    const clipped = { fixedUs: 5000, perSequenceUs: 0, perPaddedTokenUs: 3 };
    expect(residual(observations, c)).toBeLessThan(residual(observations, clipped));
  });
});

const observationArb = fc.record({
  sequences: fc.integer({ min: 1, max: 256 }),
  paddedTokens: fc.integer({ min: 1, max: 20_000 }),
  micros: fc.double({ min: 0, max: 1e7, noNaN: true }),
});

describe("LatencyModel properties", () => {
  it("never has negative coefficients or predictions, whatever it observes", () => {
    fc.assert(
      fc.property(
        fc.array(observationArb, { maxLength: 120 }),
        fc.array(
          observationArb.map(({ sequences, paddedTokens }) => ({ sequences, paddedTokens })),
          {
            minLength: 1,
            maxLength: 10,
          },
        ),
        (observations, probes) => {
          const model = createLatencyModel({ window: 32, minSamples: 3 });
          for (const o of observations) {
            model.observe(o);
            const c = model.coefficients;
            expect(c.fixedUs).toBeGreaterThanOrEqual(0);
            expect(c.perSequenceUs).toBeGreaterThanOrEqual(0);
            expect(c.perPaddedTokenUs).toBeGreaterThanOrEqual(0);
            for (const probe of probes) expect(model.predict(probe)).toBeGreaterThanOrEqual(0);
          }
        },
      ),
    );
  });

  it("fits no worse than any other non-negative coefficients (constrained optimum)", () => {
    fc.assert(
      fc.property(
        fc.array(observationArb, { minLength: 3, maxLength: 40 }),
        fc.record({
          fixedUs: fc.double({ min: 0, max: 1e6, noNaN: true }),
          perSequenceUs: fc.double({ min: 0, max: 1e4, noNaN: true }),
          perPaddedTokenUs: fc.double({ min: 0, max: 1e3, noNaN: true }),
        }),
        (observations, other) => {
          const model = createLatencyModel({
            window: 64,
            minSamples: 3,
            outlierFactor: Infinity,
          });
          for (const o of observations) model.observe(o);
          const c = model.coefficients;
          fc.pre(c.fitted);
          const ours = residual(observations, c);
          expect(ours).toBeLessThanOrEqual(residual(observations, other) * (1 + 1e-9) + 1e-6);
          // Nudging any term within the feasible set does not help either.
          for (const key of ["fixedUs", "perSequenceUs", "perPaddedTokenUs"] as const) {
            for (const step of [-1e-3, 1e-3]) {
              const nudged = { ...c, [key]: Math.max(0, c[key] + step * (1 + c[key])) };
              expect(ours).toBeLessThanOrEqual(residual(observations, nudged) * (1 + 1e-9) + 1e-6);
            }
          }
        },
      ),
    );
  });
});

describe("LatencyModel fallback", () => {
  const prior = { fixedUs: 2000, perSequenceUs: 10, perPaddedTokenUs: 1 };

  it.each([
    { name: "too few samples", shapes: design(15, 5) },
    {
      name: "every batch the same shape",
      shapes: Array.from({ length: 40 }, () => ({ sequences: 8, paddedTokens: 512 })),
    },
    {
      name: "rows never vary",
      shapes: design(40, 6).map((s) => ({ ...s, sequences: 4 })),
    },
    {
      name: "padded tokens never vary",
      shapes: design(40, 6).map((s) => ({ ...s, paddedTokens: 4096 })),
    },
    {
      name: "every row the same length (tokens collinear with rows)",
      shapes: design(40, 8).map((s) => ({ ...s, paddedTokens: s.sequences * 128 })),
    },
  ])("uses the prior when $name", ({ shapes }) => {
    const model = createLatencyModel({ prior });
    feed(model, TRUTH, shapes);
    expect(model.coefficients).toEqual({ ...prior, samples: shapes.length, fitted: false });
    expect(model.predict({ sequences: 3, paddedTokens: 300 })).toBe(2000 + 30 + 300);
  });

  it("switches to the fit once the design is varied, and back when it degenerates again", () => {
    const model = createLatencyModel({ prior, window: 32 });
    const same = Array.from({ length: 32 }, () => ({ sequences: 8, paddedTokens: 512 }));
    feed(model, TRUTH, same);
    expect(model.coefficients.fitted).toBe(false);
    feed(model, TRUTH, design(32, 9));
    expect(model.coefficients.fitted).toBe(true);
    expectClose(model.coefficients, TRUTH, 1e-6);
    feed(model, TRUTH, same);
    expect(model.coefficients).toEqual({ ...prior, samples: 32, fitted: false });
  });
});

describe("LatencyModel outliers and regimes", () => {
  it.each([
    { name: "noiseless, mid-sized batch", noise: 0, shape: { sequences: 16, paddedTokens: 3200 } },
    { name: "noiseless, smallest batch", noise: 0, shape: { sequences: 1, paddedTokens: 1 } },
    {
      name: "±5% noise, mid-sized batch",
      noise: 0.05,
      shape: { sequences: 16, paddedTokens: 3200 },
    },
    { name: "±5% noise, small batch", noise: 0.05, shape: { sequences: 2, paddedTokens: 64 } },
  ])("a ×20 spike does not move the fit ($name)", ({ noise, shape }) => {
    const random = lcg(77);
    const jitter = (): number => 1 - noise + 2 * noise * random();
    const model = createLatencyModel();
    feed(model, TRUTH, design(64, 21), jitter);
    const before = model.coefficients;
    model.observe({ ...shape, micros: 20 * time(TRUTH, shape.sequences, shape.paddedTokens) });
    expect(model.outliersRejected).toBe(1);
    expect(model.coefficients).toEqual(before);
    feed(model, TRUTH, design(8, 22), jitter);
    expect(model.outliersRejected).toBe(1);
  });

  it("would be moved by the same spike with rejection off (the test above can fail)", () => {
    const model = createLatencyModel({ outlierFactor: Infinity });
    feed(model, TRUTH, design(64, 21));
    const shape = { sequences: 16, paddedTokens: 16 * 200 };
    model.observe({ ...shape, micros: 20 * time(TRUTH, shape.sequences, shape.paddedTokens) });
    expect(model.outliersRejected).toBe(0);
    expect(Math.abs(model.coefficients.fixedUs - TRUTH.fixedUs)).toBeGreaterThan(100);
  });

  it("tracks a sidecar that became 2× slower once the window has turned over", () => {
    const window = 64;
    const model = createLatencyModel({ window });
    feed(model, TRUTH, design(window, 31));
    const slower = {
      fixedUs: 2 * TRUTH.fixedUs,
      perSequenceUs: 2 * TRUTH.perSequenceUs,
      perPaddedTokenUs: 2 * TRUTH.perPaddedTokenUs,
    };
    feed(model, slower, design(window / 2, 32));
    const halfway = model.coefficients.perPaddedTokenUs;
    expect(halfway).toBeGreaterThan(TRUTH.perPaddedTokenUs);
    expect(halfway).toBeLessThan(slower.perPaddedTokenUs);
    feed(model, slower, design(window / 2, 33));
    expect(model.outliersRejected).toBe(0);
    expectClose(model.coefficients, slower, 1e-6);
  });

  it("admits a run of slow observations as a regime change (5× slower)", () => {
    const window = 64;
    const model = createLatencyModel({ window, outlierRunLength: 4 });
    feed(model, TRUTH, design(window, 41));
    const slower = {
      fixedUs: 5 * TRUTH.fixedUs,
      perSequenceUs: 5 * TRUTH.perSequenceUs,
      perPaddedTokenUs: 5 * TRUTH.perPaddedTokenUs,
    };
    feed(model, slower, design(3, 42));
    expect(model.outliersRejected).toBe(3);
    expect(model.coefficients.perPaddedTokenUs).toBeCloseTo(TRUTH.perPaddedTokenUs, 6);
    feed(model, slower, design(window + 4, 43));
    expect(model.outliersRejected).toBeGreaterThanOrEqual(4);
    expectClose(model.coefficients, slower, 1e-6);
  });
});

describe("LatencyModel.observe validation", () => {
  it.each([
    { o: { sequences: 0, paddedTokens: 10, micros: 5 }, message: "sequences must be a positive" },
    { o: { sequences: 1.5, paddedTokens: 10, micros: 5 }, message: "sequences must be a positive" },
    { o: { sequences: 1, paddedTokens: 0, micros: 5 }, message: "paddedTokens must be at least 1" },
    {
      o: { sequences: 1, paddedTokens: Number.NaN, micros: 5 },
      message: "paddedTokens must be at least 1",
    },
    { o: { sequences: 1, paddedTokens: 10, micros: -1 }, message: "micros must be finite" },
    { o: { sequences: 1, paddedTokens: 10, micros: Infinity }, message: "micros must be finite" },
  ])("rejects $o", ({ o, message }) => {
    const model = createLatencyModel();
    expect(() => {
      model.observe(o);
    }).toThrow(RangeError);
    expect(() => {
      model.observe(o);
    }).toThrow(message);
    expect(model.coefficients.samples).toBe(0);
  });
});
