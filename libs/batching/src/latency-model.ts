/**
 * The shape of a batch as the latency model sees it: how many rows, and how many tokens once
 * every row is padded to the longest ({@link paddedTokens}).
 */
export interface BatchShape {
  /** Rows (inputs) in the batch; a positive integer. */
  readonly sequences: number;
  /** `sequences × longest row`; at least 1. */
  readonly paddedTokens: number;
}

/** One measured batch: its shape and how long the sidecar took to run it. */
export interface LatencyObservation extends BatchShape {
  /** Measured run time in microseconds; finite and not negative. */
  readonly micros: number;
}

/** The three terms of `micros = fixedUs + perSequenceUs × sequences + perPaddedTokenUs × paddedTokens`. */
export interface LatencyTerms {
  /** Cost of any batch at all: the socket round trip, kernel launches, pooling setup. */
  readonly fixedUs: number;
  /** Cost per row that does not scale with length: pooling, normalisation, result framing. */
  readonly perSequenceUs: number;
  /** Cost per padded token: the forward pass itself. */
  readonly perPaddedTokenUs: number;
}

/** What {@link LatencyModel.coefficients} reports: the terms in use and where they come from. */
export interface LatencyCoefficients extends LatencyTerms {
  /** Observations in the window the fit was made from. */
  readonly samples: number;
  /** `true` when the terms are fitted to the window, `false` while they are the prior. */
  readonly fitted: boolean;
}

/** Options for {@link createLatencyModel}; every field is optional. */
export interface LatencyModelOptions {
  /**
   * How many of the most recent observations the fit uses.
   *
   * A sliding window rather than exponential forgetting: after `window` new observations the old
   * regime is gone completely (a sidecar that got slower, a model moved to another device), the
   * memory is a fixed ring buffer, and `samples` means exactly what it says. Exponential
   * forgetting never forgets anything fully and its effective sample count is only implied by the
   * decay factor.
   *
   * @default 256
   */
  readonly window?: number;
  /**
   * Observations the window must hold before a fit replaces the prior. The design must also be
   * non-degenerate (see {@link createLatencyModel}); this guards against fitting three terms to a
   * handful of noisy points.
   *
   * @default 16
   */
  readonly minSamples?: number;
  /**
   * The terms used until a fit is possible. The default is a deliberately rough guess of the
   * order of a MiniLM-class encoder on one CPU core (1 ms fixed, 50 µs a row, 10 µs a padded
   * token: a full 16384-token batch ≈ 165 ms). It only has to be the right order of magnitude:
   * it sizes the first `minSamples` batches and is then replaced by measurement. Prefer a value
   * from `tools/bench` for the model and device at hand.
   *
   * @default DEFAULT_LATENCY_PRIOR
   */
  readonly prior?: LatencyTerms;
  /**
   * Once fitted, an observation slower than `outlierFactor × predicted`, and also more than six
   * residual standard deviations of the current fit above the prediction, is held out of the window
   * as an outlier (a GC pause, a page fault storm, a co-scheduled kernel). Only slow outliers are
   * rejected: those are what happen to latency measurements, and one would make every later
   * batch look dear. The second condition keeps a fit that is known to be loose (noisy
   * measurements, or a window straddling two regimes) from rejecting honest observations of small
   * batches, whose prediction rests mostly on the least certain term, the fixed one. `Infinity`
   * turns rejection off.
   *
   * @default 3
   */
  readonly outlierFactor?: number;
  /**
   * Consecutive rejected observations after which they are taken as a regime change, not as
   * outliers, and all admitted to the window. Without this a sidecar that became more than
   * `outlierFactor` times slower would never be learned.
   *
   * @default 8
   */
  readonly outlierRunLength?: number;
}

/** {@link LatencyModelOptions} validated, with every default filled. */
export interface CompiledLatencyModelOptions {
  readonly window: number;
  readonly minSamples: number;
  readonly prior: LatencyTerms;
  readonly outlierFactor: number;
  readonly outlierRunLength: number;
}

/** The prior used when {@link LatencyModelOptions.prior} is not given. */
export const DEFAULT_LATENCY_PRIOR: LatencyTerms = Object.freeze({
  fixedUs: 1_000,
  perSequenceUs: 50,
  perPaddedTokenUs: 10,
});

/**
 * A batch latency model a worker learns online from its own measured batches.
 */
export interface LatencyModel {
  /**
   * Records one measured batch and refits. O(window).
   *
   * @throws RangeError when the observation is not a valid batch shape with a finite,
   *   non-negative time.
   */
  observe(observation: LatencyObservation): void;
  /** Predicted run time in microseconds of a batch of this shape; never negative, never allocates. */
  predict(shape: BatchShape): number;
  /** The terms in use now. */
  readonly coefficients: LatencyCoefficients;
  /** Observations held out as outliers so far (including any later admitted as a regime change). */
  readonly outliersRejected: number;
}

/**
 * The fit is unusable when `sequences` and `paddedTokens` move together this closely over the
 * window (squared correlation above `1 − MIN_INDEPENDENT_SPREAD`, a variance inflation factor
 * above 100): the data then cannot tell a per-row cost from a per-token cost.
 */
const MIN_INDEPENDENT_SPREAD = 0.01;

/** Residual standard deviations above the prediction an observation must also exceed to be an outlier. */
const OUTLIER_SIGMAS = 6;

/** Pivot below which a scaled subset system is deemed singular. */
const SINGULAR_PIVOT = 1e-12;

/**
 * Validates model options once and fills defaults.
 *
 * @throws RangeError for a window or counts that are not positive integers, `minSamples` outside
 *   `[3, window]`, `outlierRunLength` above `window`, `outlierFactor` not above 1, or a prior term
 *   that is negative or not finite.
 */
export function compileLatencyModelOptions(
  options: LatencyModelOptions = {},
): CompiledLatencyModelOptions {
  const window = positiveInteger("window", options.window ?? 256);
  const minSamples = positiveInteger("minSamples", options.minSamples ?? 16);
  if (minSamples < 3 || minSamples > window) {
    throw new RangeError(
      `latency model: minSamples must be between 3 and window (${window}), got ${minSamples}`,
    );
  }
  const outlierRunLength = positiveInteger("outlierRunLength", options.outlierRunLength ?? 8);
  if (outlierRunLength > window) {
    throw new RangeError(
      `latency model: outlierRunLength must not exceed window (${window}), got ${outlierRunLength}`,
    );
  }
  const outlierFactor = options.outlierFactor ?? 3;
  if (Number.isNaN(outlierFactor) || outlierFactor <= 1) {
    throw new RangeError(
      `latency model: outlierFactor must be above 1, got ${String(outlierFactor)}`,
    );
  }
  const prior = options.prior ?? DEFAULT_LATENCY_PRIOR;
  return Object.freeze({
    window,
    minSamples,
    outlierFactor,
    outlierRunLength,
    prior: Object.freeze({
      fixedUs: nonNegative("prior.fixedUs", prior.fixedUs),
      perSequenceUs: nonNegative("prior.perSequenceUs", prior.perSequenceUs),
      perPaddedTokenUs: nonNegative("prior.perPaddedTokenUs", prior.perPaddedTokenUs),
    }),
  });
}

/**
 * Creates a latency model `micros = a + b·sequences + c·paddedTokens` fitted online.
 *
 * - **Fit**: least squares over the last `window` observations, subject to `a, b, c ≥ 0`. A
 *   negative term fitted to noise would make huge batches look free (or cheaper than small
 *   ones), so the constrained problem is solved exactly, by trying every active set: for each of
 *   the seven non-empty subsets of terms the unconstrained least-squares solution on that subset
 *   is computed (the others held at 0); among those with no negative term, plus the all-zero
 *   point, the one with the least residual sum of squares is the constrained optimum. (The
 *   optimum is the unconstrained solution on its own support, and every candidate is feasible,
 *   so the least-residual feasible candidate is it.) Clipping the unconstrained solution at 0
 *   instead would leave the other terms fitted for a negative value that is no longer there.
 * - **Fallback**: until the window holds `minSamples` observations and its design is
 *   non-degenerate (both `sequences` and `paddedTokens` vary, and not almost collinearly), the
 *   model switches to the prior rather than blending: a rank-deficient fit has a whole line of
 *   equally good solutions, and any blend would still pick one of them arbitrarily. It switches
 *   back to the prior if the window becomes degenerate again. A workload whose rows all have the
 *   same length keeps `paddedTokens = L × sequences` and therefore stays on the prior.
 * - **Outliers**: once fitted, an observation slower than `outlierFactor ×` the prediction, and
 *   more than six residual standard deviations above it, is held out; `outlierRunLength` consecutive ones are admitted together as a regime change.
 *   Before the first fit there is nothing trustworthy to compare against, so everything is
 *   admitted; one spike then stays in the window until `window` newer observations push it out.
 *
 * `observe` costs O(window) (the sums are recomputed from the window, so no rounding drift
 * accumulates); `predict` reads three numbers and allocates nothing.
 */
export function createLatencyModel(options: LatencyModelOptions = {}): LatencyModel {
  return new WindowedLatencyModel(compileLatencyModelOptions(options));
}

class WindowedLatencyModel implements LatencyModel {
  readonly #o: CompiledLatencyModelOptions;
  readonly #sequences: Float64Array;
  readonly #tokens: Float64Array;
  readonly #micros: Float64Array;
  #next = 0;
  #count = 0;
  readonly #heldSequences: Float64Array;
  readonly #heldTokens: Float64Array;
  readonly #heldMicros: Float64Array;
  #held = 0;
  #rejected = 0;
  #a: number;
  #b: number;
  #c: number;
  /** Residual standard deviation of the current fit, in microseconds. */
  #sigma = 0;
  #coefficients: LatencyCoefficients;

  constructor(options: CompiledLatencyModelOptions) {
    this.#o = options;
    this.#sequences = new Float64Array(options.window);
    this.#tokens = new Float64Array(options.window);
    this.#micros = new Float64Array(options.window);
    this.#heldSequences = new Float64Array(options.outlierRunLength);
    this.#heldTokens = new Float64Array(options.outlierRunLength);
    this.#heldMicros = new Float64Array(options.outlierRunLength);
    this.#a = options.prior.fixedUs;
    this.#b = options.prior.perSequenceUs;
    this.#c = options.prior.perPaddedTokenUs;
    this.#coefficients = this.#snapshot(false);
  }

  get coefficients(): LatencyCoefficients {
    return this.#coefficients;
  }

  get outliersRejected(): number {
    return this.#rejected;
  }

  predict(shape: BatchShape): number {
    return this.#a + this.#b * shape.sequences + this.#c * shape.paddedTokens;
  }

  observe(observation: LatencyObservation): void {
    const { sequences, paddedTokens, micros } = observation;
    if (!Number.isSafeInteger(sequences) || sequences < 1) {
      throw new RangeError(
        `latency model: sequences must be a positive integer, got ${String(sequences)}`,
      );
    }
    if (!Number.isFinite(paddedTokens) || paddedTokens < 1) {
      throw new RangeError(
        `latency model: paddedTokens must be at least 1, got ${String(paddedTokens)}`,
      );
    }
    if (!Number.isFinite(micros) || micros < 0) {
      throw new RangeError(
        `latency model: micros must be finite and not negative, got ${String(micros)}`,
      );
    }
    const predicted = this.predict(observation);
    if (
      this.#coefficients.fitted &&
      micros > this.#o.outlierFactor * predicted &&
      micros - predicted > OUTLIER_SIGMAS * this.#sigma
    ) {
      this.#rejected += 1;
      this.#heldSequences[this.#held] = sequences;
      this.#heldTokens[this.#held] = paddedTokens;
      this.#heldMicros[this.#held] = micros;
      this.#held += 1;
      if (this.#held < this.#o.outlierRunLength) return;
      for (let i = 0; i < this.#held; i += 1) {
        this.#push(this.#heldSequences[i] ?? 0, this.#heldTokens[i] ?? 0, this.#heldMicros[i] ?? 0);
      }
    } else {
      this.#push(sequences, paddedTokens, micros);
    }
    this.#held = 0;
    this.#refit();
  }

  #push(sequences: number, paddedTokens: number, micros: number): void {
    this.#sequences[this.#next] = sequences;
    this.#tokens[this.#next] = paddedTokens;
    this.#micros[this.#next] = micros;
    this.#next = (this.#next + 1) % this.#o.window;
    if (this.#count < this.#o.window) this.#count += 1;
  }

  #refit(): void {
    const fit = this.#count >= this.#o.minSamples ? this.#fit() : undefined;
    if (fit === undefined) {
      this.#a = this.#o.prior.fixedUs;
      this.#b = this.#o.prior.perSequenceUs;
      this.#c = this.#o.prior.perPaddedTokenUs;
    } else {
      [this.#a, this.#b, this.#c] = fit.terms;
      this.#sigma = Math.sqrt(fit.residual / Math.max(1, this.#count - 3));
    }
    this.#coefficients = this.#snapshot(fit !== undefined);
  }

  /**
   * The constrained least-squares terms and their residual sum of squares, or `undefined` when
   * the window's design is degenerate.
   */
  #fit(): { terms: [number, number, number]; residual: number } | undefined {
    const n = this.#count;
    const s = this.#sequences;
    const p = this.#tokens;
    const t = this.#micros;
    let meanS = 0;
    let meanP = 0;
    for (let i = 0; i < n; i += 1) {
      meanS += s[i] ?? 0;
      meanP += p[i] ?? 0;
    }
    meanS /= n;
    meanP /= n;
    let varS = 0;
    let varP = 0;
    let covSP = 0;
    for (let i = 0; i < n; i += 1) {
      const ds = (s[i] ?? 0) - meanS;
      const dp = (p[i] ?? 0) - meanP;
      varS += ds * ds;
      varP += dp * dp;
      covSP += ds * dp;
    }
    if (varS <= 0 || varP <= 0) return undefined;
    if (1 - (covSP * covSP) / (varS * varP) < MIN_INDEPENDENT_SPREAD) return undefined;

    // Normal equations X'X θ = X't for the columns [1, s, p], scaled to a unit diagonal so that
    // one pivot threshold suits batches of any size.
    const gram = [
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ];
    const rhs = [0, 0, 0];
    for (let i = 0; i < n; i += 1) {
      const row = [1, s[i] ?? 0, p[i] ?? 0];
      const ti = t[i] ?? 0;
      for (let j = 0; j < 3; j += 1) {
        const gj = gram[j] as number[];
        const xj = row[j] ?? 0;
        rhs[j] = (rhs[j] ?? 0) + xj * ti;
        for (let k = 0; k < 3; k += 1) gj[k] = (gj[k] ?? 0) + xj * (row[k] ?? 0);
      }
    }
    const scale = gram.map((r, j) => Math.sqrt(r[j] ?? 1));
    const scaledGram = gram.map((r, j) => r.map((v, k) => v / ((scale[j] ?? 1) * (scale[k] ?? 1))));
    const scaledRhs = rhs.map((v, j) => v / (scale[j] ?? 1));

    let best: [number, number, number] = [0, 0, 0];
    let bestResidual = this.#residual(best);
    for (let subset = 1; subset < 8; subset += 1) {
      const free = [0, 1, 2].filter((j) => (subset & (1 << j)) !== 0);
      const solution = solve(
        free.map((j) => free.map((k) => scaledGram[j]?.[k] ?? 0)),
        free.map((j) => scaledRhs[j] ?? 0),
      );
      if (solution === undefined || solution.some((v) => v < 0)) continue;
      const terms: [number, number, number] = [0, 0, 0];
      free.forEach((j, index) => {
        terms[j] = (solution[index] ?? 0) / (scale[j] ?? 1);
      });
      const residual = this.#residual(terms);
      if (residual < bestResidual) {
        best = terms;
        bestResidual = residual;
      }
    }
    return { terms: best, residual: bestResidual };
  }

  /** Residual sum of squares over the window, summed directly to avoid cancellation. */
  #residual([a, b, c]: readonly [number, number, number]): number {
    let sum = 0;
    for (let i = 0; i < this.#count; i += 1) {
      const e =
        (this.#micros[i] ?? 0) - a - b * (this.#sequences[i] ?? 0) - c * (this.#tokens[i] ?? 0);
      sum += e * e;
    }
    return sum;
  }

  #snapshot(fitted: boolean): LatencyCoefficients {
    return Object.freeze({
      fixedUs: this.#a,
      perSequenceUs: this.#b,
      perPaddedTokenUs: this.#c,
      samples: this.#count,
      fitted,
    });
  }
}

/**
 * Solves a small dense system by Gaussian elimination with partial pivoting; `undefined` when
 * a pivot falls below {@link SINGULAR_PIVOT}.
 */
function solve(matrix: number[][], vector: number[]): number[] | undefined {
  const size = vector.length;
  const m = matrix.map((row, i) => [...row, vector[i] ?? 0]);
  for (let col = 0; col < size; col += 1) {
    let pivotRow = col;
    for (let r = col + 1; r < size; r += 1) {
      if (Math.abs(m[r]?.[col] ?? 0) > Math.abs(m[pivotRow]?.[col] ?? 0)) pivotRow = r;
    }
    const pivot = m[pivotRow] as number[];
    if (Math.abs(pivot[col] ?? 0) < SINGULAR_PIVOT) return undefined;
    m[pivotRow] = m[col] as number[];
    m[col] = pivot;
    for (let r = col + 1; r < size; r += 1) {
      const row = m[r] as number[];
      const factor = (row[col] ?? 0) / (pivot[col] ?? 1);
      for (let k = col; k <= size; k += 1) row[k] = (row[k] ?? 0) - factor * (pivot[k] ?? 0);
    }
  }
  const x = new Array<number>(size).fill(0);
  for (let r = size - 1; r >= 0; r -= 1) {
    const row = m[r] as number[];
    let sum = row[size] ?? 0;
    for (let k = r + 1; k < size; k += 1) sum -= (row[k] ?? 0) * (x[k] ?? 0);
    x[r] = sum / (row[r] ?? 1);
  }
  return x;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`latency model: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `latency model: ${name} must be finite and not negative, got ${String(value)}`,
    );
  }
  return value;
}
