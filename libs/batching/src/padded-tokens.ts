import type { BatchCandidate } from "./candidate.js";

/**
 * The tokens a batch costs once padded: every row is padded to the longest row, so the sidecar
 * pays `total inputs × longest input` whatever the real lengths are. This is the quantity the
 * token budget bounds, because it is what drives activation memory and forward time.
 *
 * An empty batch costs 0.
 */
export function paddedTokens(batch: readonly BatchCandidate[]): number {
  let inputs = 0;
  let longest = 0;
  for (const item of batch) {
    inputs += item.inputs;
    if (item.maxInputTokens > longest) longest = item.maxInputTokens;
  }
  return inputs * longest;
}
