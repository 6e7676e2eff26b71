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
const Tokenizer = (
  hf as unknown as { Tokenizer: new (json: object, config: object) => HfTokenizer }
).Tokenizer;

/** Tokens a model will see for a text, special tokens included, before truncation. */
export interface TokenCounter {
  /** `exact` when the model's own tokenizer counts; `estimate` for the calibrated fallback. */
  readonly kind: "exact" | "estimate";
  count(text: string): number;
  /**
   * Text for token ids (OpenAI's int-array input, without the model's own `[CLS]`/`[SEP]`,
   * which it adds itself); undefined without the model's tokenizer. The sidecar takes texts
   * only, so ids are decoded here and re-encoded there. Special tokens are kept as their text
   * (`[UNK]`), which the tokenizer matches back to the same id, so the round trip gives back
   * the ids a tokenizer produced (tested on every fixture sentence).
   */
  readonly decode?: (ids: readonly number[]) => string;
  /** Ids run from 0 to `vocabSize - 1`; set with `decode`. */
  readonly vocabSize?: number;
}

/**
 * Counts with the model's own `tokenizer.json`. Exact counts let the annotator reject an input
 * that is too long for `truncate: false` before it reaches a worker, and make the batch
 * former's padding arithmetic real rather than guessed.
 */
export async function loadTokenCounter(modelDir: string): Promise<TokenCounter> {
  const [tokenizerJson, configJson] = await Promise.all([
    readFile(join(modelDir, "tokenizer.json"), "utf8"),
    readFile(join(modelDir, "tokenizer_config.json"), "utf8").catch(() => "{}"),
  ]);
  const tokenizer = new Tokenizer(
    JSON.parse(tokenizerJson) as object,
    JSON.parse(configJson) as object,
  );
  let vocabSize = 0;
  for (const id of tokenizer.get_vocab(true).values()) vocabSize = Math.max(vocabSize, id + 1);
  return {
    kind: "exact",
    count: (text) => tokenizer.encode(text).ids.length,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    vocabSize,
  };
}

/**
 * A calibrated estimate for models whose tokenizer is not available to the annotator:
 * WordPiece/BPE vocabularies average about four ASCII characters per token, while scripts
 * without spaces (CJK) take roughly a token per character.
 */
export function estimatingTokenCounter(specialTokens = 2): TokenCounter {
  return {
    kind: "estimate",
    count(text) {
      let ascii = 0;
      let other = 0;
      for (const ch of text) {
        if (ch.charCodeAt(0) < 0x80) ascii++;
        else other++;
      }
      return specialTokens + Math.ceil(ascii / 4) + other;
    },
  };
}
