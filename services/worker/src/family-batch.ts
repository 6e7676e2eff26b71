import type { Context } from "@opentelemetry/api";
import type { LatencyObservation } from "@shoal/batching";
import type { ModelEntry } from "@shoal/config";
import type { SidecarClient } from "@shoal/sidecar-client";
import type { Answer } from "./answers.js";
import type { PulledItem } from "./pulled-item.js";

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
