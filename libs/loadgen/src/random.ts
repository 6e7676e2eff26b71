/**
 * A seeded pseudo-random source, so that a workload file and a seed name exactly one sequence
 * of requests: two runs of a bench (pull and router mode) see the same arrivals.
 *
 * SplitMix32 (Steele, Lea and Flood's SplitMix, 32-bit output): one add and three
 * xor-shift-multiplies per draw, full period 2^32, and good enough statistically for arrival
 * times and mixes; it is not for cryptography.
 */
export class Random {
  #state: number;

  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x9e3779b9) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 2 ** 32;
  }

  /** Exponentially distributed with the given rate (mean 1 / rate). */
  exponential(rate: number): number {
    return -Math.log(1 - this.next()) / rate;
  }

  /** Standard normal, by Box–Muller (the second value is dropped to keep draws independent). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /**
   * Gamma-distributed with the given shape and mean 1 (scale 1 / shape), by Marsaglia and
   * Tsang's method; a shape below 1 is drawn as shape + 1 and scaled by U^(1/shape). A renewal
   * process with these gaps has a coefficient of variation of 1 / sqrt(shape): 1 is Poisson,
   * above 1 is burstier.
   */
  gamma(shape: number): number {
    if (!(shape > 0) || !Number.isFinite(shape)) {
      throw new RangeError(`gamma shape must be positive, got ${shape}`);
    }
    if (shape < 1) {
      return this.gamma(shape + 1) * ((shape + 1) / shape) * (1 - this.next()) ** (1 / shape);
    }
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      const x = this.normal();
      const v = (1 + c * x) ** 3;
      if (v <= 0) continue;
      const u = 1 - this.next();
      if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return (d * v) / shape;
    }
  }

  /** An index in [0, weights.length) with probability proportional to its weight. */
  pick(cumulative: readonly number[]): number {
    const total = cumulative.at(-1) ?? 0;
    const x = this.next() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (x < (cumulative[mid] as number)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/** Running sums of `weights`, the form {@link Random.pick} takes. */
export function cumulative(weights: readonly number[]): number[] {
  let sum = 0;
  return weights.map((w) => (sum += w));
}

/** Zipf weights of `n` ranks with exponent `s`: rank k (from 1) weighs 1 / k^s. */
export function zipfWeights(n: number, s: number): number[] {
  return Array.from({ length: n }, (_, k) => 1 / (k + 1) ** s);
}
