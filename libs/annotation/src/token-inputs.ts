import type { TokenIds } from "@shoal/proto";

/**
 * Why token-id inputs cannot be queued, or undefined when they can: every id must be in the
 * model's vocabulary. Checked here, exactly, so that one client's bad ids never fail a batch
 * they share with other requests; the ids then go to the sidecar as they are.
 */
export function tokenInputsError(
  inputs: readonly TokenIds[],
  vocabSize: number | undefined,
  modelId: string,
): string | undefined {
  if (vocabSize === undefined) {
    return `model "${modelId}" has no vocabulary here to check token ids against; send text`;
  }
  for (const [index, { ids }] of inputs.entries()) {
    const bad = ids.findIndex((id) => id >= vocabSize);
    if (bad >= 0) {
      return `input ${index}: token id ${ids[bad]} at ${bad} is outside the vocabulary of model "${modelId}" (${vocabSize} ids)`;
    }
  }
  return undefined;
}
