/** What one load step measured. */
export interface StepResult {
  /** Offered load, requests/s (the schedule's rate). */
  readonly offeredRps: number;
  /** Requests sent in the measured window. */
  readonly sent: number;
  /**
   * Requests sent in the measured window, per second: the load actually offered, which a
   * Poisson plan puts a few percent either side of `offeredRps`.
   */
  readonly sentRps: number;
  /** Answers received within the measured window, per second: the achieved throughput. */
  readonly achievedRps: number;
  /** Tokens of the answered requests (input tokens; generated tokens for generate), per second. */
  readonly achievedTokensPerS: number;
  /** Requests that failed (an error answer, a timeout); each is a lost answer for the SLO. */
  readonly failed: number;
  /** Latency of answered requests, ms. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  /**
   * Percentiles of each phase the answers reported (`Server-Timing`: annotate, queue, batch,
   * compute, total), ms, over the measured requests; absent when none reported any.
   */
  readonly phasesMs?: Readonly<Record<string, StepResult["latencyMs"]>>;
  /** Busy share of the accelerators over the window, 0..1, when the harness can measure it. */
  readonly utilization?: number;
  /** Batch fill: mean inputs per batch over the step, when the harness can count batches. */
  readonly batchFill?: number;
  /**
   * p99 latency of the measured requests sent in each whole second of the step (index 0 is the
   * step's first second; null where none were sent or answered), ms: when in the step the tail
   * happened, e.g. right after popularity moved.
   */
  readonly p99BySecondMs?: readonly (number | null)[];
}

/** The value at quantile `p` of an ascending array (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))
  ] as number;
}

/** p50, p90 and p99 of unsorted latencies. */
export function percentiles(latencies: readonly number[]): StepResult["latencyMs"] {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99) };
}
