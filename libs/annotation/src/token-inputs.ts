import type { TokenIds } from "@shoal/proto";
import type { Tokenizer } from "./tokenizer.js";

/**
 * Turns token-id inputs into the texts the sidecar takes, after checking every id against the
 * model's vocabulary. Returns the client-safe reason instead when they cannot be used.
 */
export function decodeTokenInputs(
  inputs: readonly TokenIds[],
  tokenizer: Tokenizer | undefined,
  modelId: string,
): { texts: string[] } | { error: string } {
  if (tokenizer === undefined) {
    return { error: `model "${modelId}" has no tokenizer here to read token ids; send text` };
  }
  for (const [index, { ids }] of inputs.entries()) {
    const bad = ids.findIndex((id) => id >= tokenizer.vocabSize);
    if (bad >= 0) {
      return {
        error: `input ${index}: token id ${ids[bad]} at ${bad} is outside the vocabulary of model "${modelId}" (${tokenizer.vocabSize} ids)`,
      };
    }
  }
  return { texts: inputs.map(({ ids }) => tokenizer.decode(ids)) };
}
