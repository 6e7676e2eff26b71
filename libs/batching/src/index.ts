export type { BatchCandidate } from "./candidate.js";
export type { BatchBudget, BatchBudgetOptions } from "./budget.js";
export { compileBatchBudget, DEFAULT_BATCH_BUDGET } from "./budget.js";
export type { FormedBatch } from "./form-batch.js";
export { formBatch } from "./form-batch.js";
export { compareCandidates } from "./order.js";
export { paddedTokens } from "./padded-tokens.js";
