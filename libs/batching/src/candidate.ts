/**
 * What batch formation needs to know about one unit of pulled work.
 *
 * The worker wraps its own work item (message handle, payload, reply subject) in a type that
 * extends this interface; `formBatch` is generic over it so the caller gets its own objects back
 * without a lookup table.
 */
export interface BatchCandidate {
  /** Number of model inputs (rows) this item contributes to a batch. */
  readonly inputs: number;
  /**
   * Token count of this item's longest input. The sidecar pads every row of a batch to the
   * longest row, so this, not the total, decides what the item costs in a mixed batch.
   */
  readonly maxInputTokens: number;
  /** Sum of the token counts of all inputs, for cost models that price real work. */
  readonly totalTokens: number;
  /** Scheduling priority; higher runs first. */
  readonly priority: number;
  /** Absolute deadline in Unix milliseconds; `0` means the item has no deadline. */
  readonly deadlineUnixMs: number;
  /** Monotonic arrival sequence number, the tie-breaker that keeps equal work first-come-first-served. */
  readonly arrival: number;
}
