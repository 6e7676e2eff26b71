import type { Context } from "@opentelemetry/api";
import type { LatencyObservation } from "@shoal/batching";
import type { ModelEntry } from "@shoal/config";
import type { SidecarClient } from "@shoal/sidecar-client";
import { traceparentOf } from "@shoal/telemetry";
import type { Answer, AnswerOutcome } from "./answers.js";
import { overLengthAnswer } from "./over-length.js";
import type { PulledItem } from "./pulled-item.js";
import { itemTimings } from "./timings.js";

/** What a family's batch runner needs besides the items. */
export interface FamilyBatchContext {
  readonly model: ModelEntry;
  readonly batchTimeoutMs: number;
}

/** One batch's items, each with the trace context its compute is recorded under. */
export interface FamilyBatch {
  readonly items: readonly { readonly p: PulledItem; readonly ctx: Context }[];
  /** When the batch was handed to the sidecar, Unix µs. */
  readonly startedUs: number;
  /** Estimated tokens over the batch, for the answers' timings. */
  readonly batchTokens: number;
}

/** A family's batch done: each item's answer, and what the latency model learns from it. */
export interface FamilyBatchResult {
  readonly answers: Answer[];
  readonly observation: LatencyObservation;
}

/**
 * Runs one batch of a family's items on the sidecar as one call and cuts its result into
 * each item's answer. The puller around it (forming, publishing, acking) is the same for every
 * family; a new family is one more runner.
 */
export type FamilyBatchRunner = (
  sidecar: SidecarClient,
  fc: FamilyBatchContext,
  batch: FamilyBatch,
) => Promise<FamilyBatchResult>;

/** Each item's trace context, for the sidecar to record its compute under. */
export function batchTraceparents(batch: FamilyBatch): string[] {
  return batch.items
    .map(({ ctx }) => traceparentOf(ctx))
    .filter((t): t is string => t !== undefined);
}

/** What every sidecar batch answer reports per row and for the whole batch. */
export interface RowCounts {
  readonly computeUs: number;
  readonly tokens: readonly number[];
  readonly truncated: readonly boolean[];
}

/**
 * Cuts a sidecar answer into each item's answer, row range by row range in item order:
 * `outcome(row, n)` builds the family's result for rows `row … row + n`, unless the item
 * refused truncation and one of its inputs was cut.
 */
export function answerRows(
  fc: FamilyBatchContext,
  batch: FamilyBatch,
  counts: RowCounts,
  outcome: (row: number, n: number) => AnswerOutcome,
): FamilyBatchResult {
  const rows = counts.tokens.length;
  const times = {
    startedUs: batch.startedUs,
    computeUs: counts.computeUs,
    batchItems: rows,
    batchTokens: batch.batchTokens,
  };
  let row = 0;
  const answers: Answer[] = batch.items.map(({ p }) => {
    const n = p.inputs;
    const refused = overLengthAnswer(p, counts.truncated.slice(row, row + n), fc.model);
    const answer = refused ?? outcome(row, n);
    row += n;
    return { item: p.item, outcome: answer, timings: refused ? undefined : itemTimings(p, times) };
  });
  return {
    answers,
    observation: {
      sequences: rows,
      paddedTokens: rows * Math.max(1, ...counts.tokens),
      micros: counts.computeUs,
    },
  };
}
