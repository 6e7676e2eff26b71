/** How a request's inputs are cut into queued parts. */
export interface PartLimits {
  /** The model's maximum input length in tokens. */
  readonly maxInputTokens: number;
  /** Upper bound on `inputs × longest input` per part, so one part fits a batch. */
  readonly maxPaddedTokens: number;
  /** Upper bound on inputs per part. */
  readonly maxInputs: number;
  /**
   * Upper bound on the bytes of a part's inputs, so that every queued item fits a NATS
   * message whatever the texts' token counts (an input alone may exceed it: the caller keeps
   * such inputs out of the queue). @default no bound
   */
  readonly maxBytes?: number;
}

export interface PlannedPart {
  readonly firstInput: number;
  readonly inputs: number;
  /** Longest input of the part after truncation. */
  readonly maxInputTokens: number;
  /** Sum over the part's inputs after truncation. */
  readonly totalTokens: number;
}

export interface Plan {
  readonly parts: readonly PlannedPart[];
  readonly totalTokens: number;
  /** Indices of inputs longer than the model allows (before truncation). */
  readonly overLength: readonly number[];
}

/**
 * Cuts consecutive inputs into parts that each fit one batch and one NATS message. Order is
 * kept so the ingress can reassemble answers by offset; a part closes when adding the next
 * input would push its padded cost, input count or bytes over the limits.
 */
export function planParts(
  tokenCounts: readonly number[],
  limits: PartLimits,
  byteSizes?: readonly number[],
): Plan {
  const maxBytes = limits.maxBytes ?? Number.POSITIVE_INFINITY;
  const parts: PlannedPart[] = [];
  const overLength: number[] = [];
  let first = 0;
  let count = 0;
  let longest = 0;
  let sum = 0;
  let bytes = 0;
  let total = 0;
  tokenCounts.forEach((raw, index) => {
    if (raw > limits.maxInputTokens) overLength.push(index);
    const tokens = Math.min(raw, limits.maxInputTokens);
    const size = byteSizes?.[index] ?? 0;
    total += tokens;
    const padded = (count + 1) * Math.max(longest, tokens);
    if (
      count > 0 &&
      (padded > limits.maxPaddedTokens || count + 1 > limits.maxInputs || bytes + size > maxBytes)
    ) {
      parts.push({ firstInput: first, inputs: count, maxInputTokens: longest, totalTokens: sum });
      first = index;
      count = 0;
      longest = 0;
      sum = 0;
      bytes = 0;
    }
    count++;
    longest = Math.max(longest, tokens);
    sum += tokens;
    bytes += size;
  });
  if (count > 0) {
    parts.push({ firstInput: first, inputs: count, maxInputTokens: longest, totalTokens: sum });
  }
  return { parts, totalTokens: total, overLength };
}

/**
 * The length bucket of a part: the smallest edge at or above its longest input. Parts in one
 * bucket batch together with little padding.
 */
export function lengthBucket(tokens: number, edges: readonly number[]): number {
  for (const edge of edges) if (tokens <= edge) return edge;
  return edges[edges.length - 1] ?? tokens;
}
