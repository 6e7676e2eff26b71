import type { TokenIds } from "@shoal/proto";
import type { TokenCounter } from "./token-counter.js";

/**
 * Turns token-id inputs into the texts the sidecar takes, after checking every id against the
 * model's vocabulary. Returns the client-safe reason instead when they cannot be used.
 */
export function decodeTokenInputs(
  inputs: readonly TokenIds[],
  counter: TokenCounter,
  modelId: string,
): { texts: string[] } | { error: string } {
  const { decode, vocabSize } = counter;
  if (decode === undefined || vocabSize === undefined) {
    return { error: `model "${modelId}" has no tokenizer here to read token ids; send text` };
  }
  for (const [index, { ids }] of inputs.entries()) {
    const bad = ids.findIndex((id) => id >= vocabSize);
    if (bad >= 0) {
      return {
        error: `input ${index}: token id ${ids[bad]} at ${bad} is outside the vocabulary of model "${modelId}" (${vocabSize} ids)`,
      };
    }
  }
  return { texts: inputs.map(({ ids }) => decode(ids)) };
}
