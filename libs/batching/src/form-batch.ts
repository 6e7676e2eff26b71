import type { BatchBudget } from "./budget.js";
import type { BatchCandidate } from "./candidate.js";
import { compareCandidates } from "./order.js";

/** The three-way split {@link formBatch} makes of its candidates. */
export interface FormedBatch<T extends BatchCandidate> {
  /** What to run now, in {@link compareCandidates} order. */
  readonly batch: T[];
  /** Still valid but not in this batch, in {@link compareCandidates} order; offer them again next round. */
  readonly putBack: T[];
  /** Deadline already passed; never computed (the caller answers them with a deadline error). */
  readonly expired: T[];
}

/**
 * Splits pulled work into the batch to run now, the work to put back, and the work that expired.
 *
 * - An item whose deadline is at or before `nowUnixMs` is expired (a deadline of `0` means none).
 *   It is never batched: computing it would only waste the accelerator on an answer nobody waits for.
 * - The rest are offered in {@link compareCandidates} order and taken greedily while the batch's
 *   {@link paddedTokens} and total inputs both stay within `budget`.
 * - An item that does not fit is put back, and the scan goes on, so smaller items later in the
 *   order may still fill the remaining room. Stopping at the first misfit would let one large item
 *   block everything behind it (head-of-line blocking) and leave the accelerator under-filled.
 *   Skipping does not starve the large item: it keeps its priority and arrival, so once the items
 *   ahead of it have run it is first in order and is taken into an empty batch.
 * - An item that alone exceeds the budget is batched alone when it reaches an empty batch; under a
 *   strict budget it could never run and would starve forever. Once the batch is over budget no
 *   further item fits, so such an item always runs by itself.
 *
 * Pure and deterministic: the same arguments always give the same split; ties the order cannot
 * break keep their input order (the sort is stable).
 */
export function formBatch<T extends BatchCandidate>(
  candidates: readonly T[],
  budget: BatchBudget,
  nowUnixMs: number,
): FormedBatch<T> {
  const expired: T[] = [];
  const live: T[] = [];
  for (const candidate of candidates) {
    if (candidate.deadlineUnixMs !== 0 && candidate.deadlineUnixMs <= nowUnixMs) {
      expired.push(candidate);
    } else {
      live.push(candidate);
    }
  }
  live.sort(compareCandidates);

  const batch: T[] = [];
  const putBack: T[] = [];
  let inputs = 0;
  let longest = 0;
  for (const candidate of live) {
    const nextInputs = inputs + candidate.inputs;
    const nextLongest = Math.max(longest, candidate.maxInputTokens);
    const fits =
      nextInputs <= budget.maxInputs && nextInputs * nextLongest <= budget.maxPaddedTokens;
    if (fits || batch.length === 0) {
      batch.push(candidate);
      inputs = nextInputs;
      longest = nextLongest;
    } else {
      putBack.push(candidate);
    }
  }
  return { batch, putBack, expired };
}
