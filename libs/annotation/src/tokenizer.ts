import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as hf from "@huggingface/tokenizers";

/**
 * The slice of `@huggingface/tokenizers` used here. Its published declarations use
 * extensionless relative imports, which NodeNext resolution cannot follow, so the shape is
 * stated once instead of arriving as an unresolved type.
 */
interface HfTokenizer {
  encode(text: string): { ids: number[] };
  decode(ids: number[], options: { skip_special_tokens: boolean }): string;
  get_vocab(withAddedTokens: boolean): Map<string, number>;
}
const HfTokenizerClass = (
  hf as unknown as { Tokenizer: new (json: object, config: object) => HfTokenizer }
).Tokenizer;

/**
 * A model's own tokenizer, as the gateway uses it: only to read token-id inputs (OpenAI's
 * int-array input). Ids are checked against the vocabulary and decoded to the text the sidecar
 * takes; special tokens are kept as their text (`[UNK]`), which the tokenizer matches back to
 * the same id, so the round trip gives back the ids a tokenizer produced (tested on every
 * fixture sentence). Token counts never come from here: the sidecar counts.
 */
export interface Tokenizer {
  /** Tokens of a text, special tokens included (for tests of the round trip). */
  count(text: string): number;
  /** Text for token ids, without the model's own `[CLS]`/`[SEP]`, which it adds itself. */
  decode(ids: readonly number[]): string;
  /** Ids run from 0 to `vocabSize - 1`. */
  readonly vocabSize: number;
}

/** Reads the model's `tokenizer.json` (and `tokenizer_config.json` when present). */
export async function loadTokenizer(modelDir: string): Promise<Tokenizer> {
  const [tokenizerJson, configJson] = await Promise.all([
    readFile(join(modelDir, "tokenizer.json"), "utf8"),
    readFile(join(modelDir, "tokenizer_config.json"), "utf8").catch(() => "{}"),
  ]);
  const tokenizer = new HfTokenizerClass(
    JSON.parse(tokenizerJson) as object,
    JSON.parse(configJson) as object,
  );
  let vocabSize = 0;
  for (const id of tokenizer.get_vocab(true).values()) vocabSize = Math.max(vocabSize, id + 1);
  return {
    count: (text) => tokenizer.encode(text).ids.length,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    vocabSize,
  };
}
