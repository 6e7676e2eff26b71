import type { BatchCandidate } from "./candidate.js";

/** Options for {@link compileLatencyTargetOptions}; every field is optional. */
export interface LatencyTargetOptions {
  /**
   * The batch latency target when no candidate deadline is tighter: the per-model trade-off
   * between throughput (bigger batches) and the latency every item in the batch pays.
   *
   * @default 50000 (50 ms)
   */
  readonly maxTargetMicros?: number;
  /**
   * Fraction of the time left before the earliest deadline kept back for the error of the
   * prediction itself; the model is a fit, not a promise.
   *
   * @default 0.2
   */
  readonly marginFraction?: number;
  /**
   * Time kept back before the earliest deadline, on top of the fraction, for what happens after
   * compute: publishing the reply, the flush, the hop back through ingress.
   *
   * @default 2000 (2 ms)
   */
  readonly marginMicros?: number;
}

/** {@link LatencyTargetOptions} validated, with every default filled. */
export interface LatencyTarget {
  readonly maxTargetMicros: number;
  readonly marginFraction: number;
  readonly marginMicros: number;
}

/**
 * Validates target options once and fills defaults.
 *
 * @throws RangeError when `maxTargetMicros` is not positive and finite, `marginFraction` is
 *   outside `[0, 1)`, or `marginMicros` is negative or not finite.
 */
export function compileLatencyTargetOptions(options: LatencyTargetOptions = {}): LatencyTarget {
  const maxTargetMicros = options.maxTargetMicros ?? 50_000;
  const marginFraction = options.marginFraction ?? 0.2;
  const marginMicros = options.marginMicros ?? 2_000;
  if (!Number.isFinite(maxTargetMicros) || maxTargetMicros <= 0) {
    throw new RangeError(
      `latency target: maxTargetMicros must be positive and finite, got ${String(maxTargetMicros)}`,
    );
  }
  if (!(marginFraction >= 0 && marginFraction < 1)) {
    throw new RangeError(
      `latency target: marginFraction must be in [0, 1), got ${String(marginFraction)}`,
    );
  }
  if (!Number.isFinite(marginMicros) || marginMicros < 0) {
    throw new RangeError(
      `latency target: marginMicros must be finite and not negative, got ${String(marginMicros)}`,
    );
  }
  return Object.freeze({ maxTargetMicros, marginFraction, marginMicros });
}

/**
 * The time a batch formed from `candidates` may take, in microseconds: what is left before the
 * earliest live deadline less the margins, and never more than `maxTargetMicros`.
 *
 * - A deadline of `0` means none; with no live deadline the answer is `maxTargetMicros`.
 * - Deadlines at or before `nowUnixMs` are ignored: {@link formBatch} expires that work and never
 *   computes it, so it must not shrink the batch for the work that is still live.
 * - When the margins eat all the time left the answer is `0`: no batch is predicted to make the
 *   deadline, which {@link maxPaddedTokensWithin} reports as `{ fits: false }`.
 *
 * The earliest deadline bounds the whole batch although it may belong to an item that ends up
 * put back; at equal priority that item leads the order, so this is the right bound, and
 * otherwise it only errs towards a smaller batch.
 */
export function latencyTargetMicros(
  candidates: readonly BatchCandidate[],
  nowUnixMs: number,
  target: LatencyTarget,
): number {
  let earliest = Infinity;
  for (const candidate of candidates) {
    const deadline = candidate.deadlineUnixMs;
    if (deadline !== 0 && deadline > nowUnixMs && deadline < earliest) earliest = deadline;
  }
  if (earliest === Infinity) return target.maxTargetMicros;
  const leftMicros = (earliest - nowUnixMs) * 1_000;
  const usable = leftMicros * (1 - target.marginFraction) - target.marginMicros;
  return Math.min(target.maxTargetMicros, Math.max(0, usable));
}
