import type { BatchBudget } from "./budget.js";
import type { LatencyModel } from "./latency-model.js";

/** What {@link maxPaddedTokensWithin} is asked: a time to fit in, for a number of rows. */
export interface LatencyBudgetRequest {
  /** Time the batch must run within, in microseconds (see {@link latencyTargetMicros}). */
  readonly targetMicros: number;
  /**
   * Rows the batch may hold, a positive integer; values above the ceiling's `maxInputs` are
   * capped to it. The per-row term is never negative, so passing more rows than the batch will
   * get (the inputs pulled so far, say) errs on the safe side.
   */
  readonly sequences: number;
}

/**
 * The answer of {@link maxPaddedTokensWithin}: either the budget to form the batch with, or a
 * plain statement that not even the smallest batch fits the target.
 */
export type LatencyBudget =
  | {
      readonly fits: true;
      /**
       * Largest padded-token count whose predicted time fits, capped at the ceiling. At least
       * the smaller of the capped `sequences` (one token a row) and the ceiling's
       * `maxPaddedTokens`.
       */
      readonly maxPaddedTokens: number;
    }
  | {
      readonly fits: false;
      /** Predicted time of the smallest batch considered: `sequences` rows of one token. */
      readonly minimumMicros: number;
    };

/**
 * The largest padded-token budget for `sequences` rows whose predicted time stays within
 * `targetMicros`, never above `ceiling.maxPaddedTokens` (the memory bound the model does not
 * know about).
 *
 * The smallest batch considered is `sequences` rows of one token each; when even that is
 * predicted over the target the answer is `{ fits: false }`, and what to do then (run the most
 * urgent item alone anyway, or expire it) is the caller's decision, not a silent zero budget.
 *
 * Monotone in the target: a larger target never gives a smaller budget.
 *
 * @throws RangeError when `sequences` is not a positive integer or `targetMicros` is NaN.
 */
export function maxPaddedTokensWithin(
  model: LatencyModel,
  request: LatencyBudgetRequest,
  ceiling: BatchBudget,
): LatencyBudget {
  const { targetMicros } = request;
  if (!Number.isSafeInteger(request.sequences) || request.sequences < 1) {
    throw new RangeError(
      `latency budget: sequences must be a positive integer, got ${String(request.sequences)}`,
    );
  }
  if (Number.isNaN(targetMicros)) {
    throw new RangeError("latency budget: targetMicros must be a number, got NaN");
  }
  const sequences = Math.min(request.sequences, ceiling.maxInputs);
  const minimumMicros = model.predict({ sequences, paddedTokens: sequences });
  if (minimumMicros > targetMicros) return { fits: false, minimumMicros };

  const { fixedUs, perSequenceUs, perPaddedTokenUs } = model.coefficients;
  const room = targetMicros - fixedUs - perSequenceUs * sequences;
  const solved = perPaddedTokenUs > 0 ? Math.floor(room / perPaddedTokenUs) : Infinity;
  let tokens = Math.min(Math.max(solved, sequences), ceiling.maxPaddedTokens);
  // The division can round up by an ulp; step back until the prediction really fits.
  while (tokens > sequences && model.predict({ sequences, paddedTokens: tokens }) > targetMicros) {
    tokens -= 1;
  }
  return { fits: true, maxPaddedTokens: tokens };
}
