import {
  compileBatchBudget,
  type BatchBudget,
  type BatchBudgetOptions,
  type LatencyTerms,
} from "@shoal/batching";
import type { ModelEntry } from "@shoal/config";

/** What the worker's own settings (its environment) say for every model it serves. */
export interface WorkerServingOptions {
  readonly budget?: BatchBudgetOptions;
  readonly batchTargetMs?: number;
  readonly maxFillWaitMs?: number;
  readonly pullBatch?: number;
  readonly maxBatchesInFlight?: number;
}

/** How one model's puller forms and runs batches. */
export interface ServingSettings {
  readonly budget: BatchBudget;
  readonly batchTargetMs: number;
  readonly maxFillWaitMs: number;
  readonly pullBatch: number;
  readonly maxBatchesInFlight: number;
  /** Batches the sidecar runs at once for the model: its model threads. */
  readonly modelThreads: number;
  /** The model's batch cost on this hardware, for the first batches; unset: a CPU guess. */
  readonly batchCostPrior: LatencyTerms | undefined;
}

/**
 * A model's serving settings: each one the worker sets explicitly wins (an operator's choice
 * for this machine), then the model's own from the catalog, where a config bundle's tuned
 * values land, then the defaults.
 */
export function servingSettings(worker: WorkerServingOptions, model: ModelEntry): ServingSettings {
  const tuned = model.serving ?? {};
  return {
    budget: compileBatchBudget({
      maxPaddedTokens: worker.budget?.maxPaddedTokens ?? tuned.maxPaddedTokens,
      maxInputs: worker.budget?.maxInputs ?? tuned.maxInputs,
    }),
    batchTargetMs: worker.batchTargetMs ?? tuned.batchTargetMs ?? 250,
    maxFillWaitMs: worker.maxFillWaitMs ?? tuned.maxFillWaitMs ?? 2,
    pullBatch: worker.pullBatch ?? tuned.fetchSize ?? 64,
    // A model thread with no batch of its own would idle, so a model on several threads gets
    // at least that many batches in flight unless the worker's operator says otherwise.
    maxBatchesInFlight:
      worker.maxBatchesInFlight ?? Math.max(tuned.batchesInFlight ?? 1, tuned.modelThreads ?? 1),
    modelThreads: tuned.modelThreads ?? 1,
    batchCostPrior: tuned.batchCostPrior,
  };
}
