import { readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * How many token ids a model's vocabulary has, read from its `tokenizer.json`: one past the
 * highest id of the model's vocabulary and its added tokens, which is what the sidecar checks
 * token-id inputs against. Only the vocabulary is read; nothing here tokenizes.
 */
export async function readVocabSize(modelDir: string): Promise<number> {
  const json = JSON.parse(await readFile(join(modelDir, "tokenizer.json"), "utf8")) as {
    model?: { vocab?: Record<string, number> | unknown[] };
    added_tokens?: { id?: unknown }[];
  };
  const vocab = json.model?.vocab;
  let size = 0;
  if (Array.isArray(vocab)) {
    // Unigram models list their pieces in id order.
    size = vocab.length;
  } else if (vocab !== undefined) {
    for (const id of Object.values(vocab)) size = Math.max(size, id + 1);
  }
  for (const token of json.added_tokens ?? []) {
    if (typeof token.id === "number") size = Math.max(size, token.id + 1);
  }
  if (size === 0) throw new Error(`${modelDir}/tokenizer.json has no vocabulary`);
  return size;
}
