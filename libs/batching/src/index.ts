export type { BatchCandidate } from "./candidate.js";
export type { BatchBudget, BatchBudgetOptions } from "./budget.js";
export { compileBatchBudget, DEFAULT_BATCH_BUDGET } from "./budget.js";
export type { FormedBatch } from "./form-batch.js";
export { formBatch } from "./form-batch.js";
export { compareCandidates } from "./order.js";
export { paddedTokens } from "./padded-tokens.js";
export type {
  BatchShape,
  CompiledLatencyModelOptions,
  LatencyCoefficients,
  LatencyModel,
  LatencyModelOptions,
  LatencyObservation,
  LatencyTerms,
} from "./latency-model.js";
export {
  compileLatencyModelOptions,
  createLatencyModel,
  DEFAULT_LATENCY_PRIOR,
} from "./latency-model.js";
export type { LatencyBudget, LatencyBudgetRequest } from "./budget-from-latency.js";
export { maxPaddedTokensWithin } from "./budget-from-latency.js";
export type { LatencyTarget, LatencyTargetOptions } from "./latency-target.js";
export { compileLatencyTargetOptions, latencyTargetMicros } from "./latency-target.js";
export { DEFAULT_LENGTH_EDGES, formBucketedBatch } from "./form-bucketed-batch.js";
