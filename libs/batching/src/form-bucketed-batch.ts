import type { BatchBudget } from "./budget.js";
import type { BatchCandidate } from "./candidate.js";
import { formBatch, type FormedBatch } from "./form-batch.js";
import { compareCandidates } from "./order.js";
import { paddedTokens } from "./padded-tokens.js";

/** The annotator's default length-bucket edges, in tokens (`shoal.work.v1.<model>.b<edge>`). */
export const DEFAULT_LENGTH_EDGES: readonly number[] = Object.freeze([16, 32, 64, 128, 256, 512]);

/**
 * Like {@link formBatch}, but chooses the length bucket whose batch fills the budget best.
 *
 * Every row of a batch is padded to its longest row, so one long item in a batch of short ones
 * spends most of the padded-token budget on padding. For each bucket edge at or above the most
 * urgent item's length, this forms the batch from the items no longer than the edge (and once
 * from everything, which is `formBatch`'s answer), and keeps the one that computes the most
 * real tokens within the budget (a tie goes to fewer padded tokens).
 * Items left out are put back, where a worker whose batch suits them (another on the host,
 * through the machine-local queue) takes them.
 *
 * What `formBatch` promises still holds: the most urgent live item always runs (every option
 * contains it, so nothing starves), the batch stays within budget unless it is that item alone,
 * expired work is never batched, and every candidate lands in exactly one output. It never
 * computes fewer real tokens than `formBatch`, whose batch is one of the options.
 */
export function formBucketedBatch<T extends BatchCandidate>(
  candidates: readonly T[],
  budget: BatchBudget,
  nowUnixMs: number,
  edges: readonly number[] = DEFAULT_LENGTH_EDGES,
): FormedBatch<T> {
  const all = formBatch(candidates, budget, nowUnixMs);
  const head = all.batch[0];
  if (head === undefined || all.putBack.length === 0) return all;
  const live = [...all.batch, ...all.putBack].sort(compareCandidates);
  const longest = Math.max(...live.map((c) => c.maxInputTokens));
  let best = { batch: all.batch, real: realTokens(all.batch), padded: paddedTokens(all.batch) };
  for (const edge of [...edges].sort((a, b) => a - b)) {
    // Edges below the head would leave it out; at or above the longest item they are `all`.
    if (edge < head.maxInputTokens || edge >= longest) continue;
    const { batch } = formBatch(
      live.filter((c) => c.maxInputTokens <= edge),
      budget,
      nowUnixMs,
    );
    const real = realTokens(batch);
    const p = paddedTokens(batch);
    if (real > best.real || (real === best.real && p < best.padded)) {
      best = { batch, real, padded: p };
    }
  }
  if (best.batch === all.batch) return all;
  const chosen = new Set<T>(best.batch);
  return {
    batch: best.batch,
    putBack: live.filter((c) => !chosen.has(c)),
    expired: all.expired,
  };
}

function realTokens(batch: readonly BatchCandidate[]): number {
  return batch.reduce((n, c) => n + c.totalTokens, 0);
}
