/**
 * The limits one batch must respect, as `formBatch` consumes them. Build it with
 * {@link compileBatchBudget} so the values are known to be positive integers.
 */
export interface BatchBudget {
  /** Upper bound on {@link paddedTokens} of a batch. */
  readonly maxPaddedTokens: number;
  /** Upper bound on the total number of inputs (rows) in a batch. */
  readonly maxInputs: number;
}

/** Options for {@link compileBatchBudget}; every field is optional. */
export interface BatchBudgetOptions {
  /**
   * Most padded tokens (`inputs × longest input`) one batch may hold. Bounds activation memory
   * and the latency of a single forward pass.
   *
   * @default 16384
   */
  readonly maxPaddedTokens?: number;
  /**
   * Most inputs one batch may hold. Must not exceed the sidecar's `--max-batch-items`, or the
   * sidecar refuses the batch.
   *
   * @default 1024
   */
  readonly maxInputs?: number;
}

/** Defaults used by {@link compileBatchBudget}; `maxInputs` matches the sidecar's own default. */
export const DEFAULT_BATCH_BUDGET: BatchBudget = Object.freeze({
  maxPaddedTokens: 16384,
  maxInputs: 1024,
});

/**
 * Validates budget options once, at startup, and fills defaults, so the hot batching path never
 * has to re-check them.
 *
 * @throws RangeError when a value is not a positive safe integer.
 */
export function compileBatchBudget(options: BatchBudgetOptions = {}): BatchBudget {
  return Object.freeze({
    maxPaddedTokens: positiveInteger(
      "maxPaddedTokens",
      options.maxPaddedTokens ?? DEFAULT_BATCH_BUDGET.maxPaddedTokens,
    ),
    maxInputs: positiveInteger("maxInputs", options.maxInputs ?? DEFAULT_BATCH_BUDGET.maxInputs),
  });
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`batch budget: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
