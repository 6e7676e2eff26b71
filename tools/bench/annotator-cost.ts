/**
 * What annotation costs per item, and how far its shape estimate is from the model's own
 * tokenizer: counts tokens for the reference fixture's sentences (short, long, non-ASCII,
 * emoji) with the tokenizer (what the annotator ran per input before the estimate replaced it)
 * and with the shape estimate, uncalibrated and calibrated by the tokenizer's counts (as the
 * sidecar's counts calibrate it in the cluster), and times both. Writes JSON to `--out`.
 *
 *   node --import tsx tools/bench/annotator-cost.ts --model-dir ~/.cache/shoal/models/all-minilm-l6-v2 --out annotator.json
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as hf from "@huggingface/tokenizers";
import { ShapeEstimate } from "@shoal/annotation";

const { values } = parseArgs({
  options: {
    "model-dir": {
      type: "string",
      default: join(homedir(), ".cache", "shoal", "models", "all-minilm-l6-v2"),
    },
    rounds: { type: "string", default: "20" },
    out: { type: "string" },
  },
});
const fixturePath = new URL("../reference/fixtures/all-minilm-l6-v2.json", import.meta.url);
const texts = (
  JSON.parse(readFileSync(fixturePath, "utf8")) as { sentences: { text: string }[] }
).sentences.map((s) => s.text);
const rounds = Number(values.rounds);

function time(counter: { count(text: string): number }): {
  us_per_item: number;
  us_per_token: number;
  tokens: number[];
} {
  const tokens = texts.map((t) => counter.count(t));
  const started = performance.now();
  for (let r = 0; r < rounds; r++) for (const t of texts) counter.count(t);
  const us = (performance.now() - started) * 1000;
  const total = tokens.reduce((a, b) => a + b, 0) * rounds;
  return { us_per_item: us / (texts.length * rounds), us_per_token: us / total, tokens };
}

/** MiniLM's limit: what a batch costs is the count after truncation, on both sides. */
const MAX_TOKENS = 256;

function errorsAgainst(exactCounts: readonly number[], estimatedCounts: readonly number[]) {
  const exact = exactCounts.map((e) => Math.min(e, MAX_TOKENS));
  const estimated = estimatedCounts.map((e) => Math.min(e, MAX_TOKENS));
  const errors = exact.map((e, i) => Math.abs((estimated[i] ?? 0) - e) / e);
  const absolute = exact.reduce((sum, e, i) => sum + Math.abs((estimated[i] ?? 0) - e), 0);
  return {
    /** Error over all tokens, as a batch's cost sees it: long inputs weigh more. */
    token_weighted_pct_error: (100 * absolute) / exact.reduce((a, b) => a + b, 0),
    mean_abs_pct_error: (100 * errors.reduce((a, b) => a + b, 0)) / errors.length,
    max_abs_pct_error: 100 * Math.max(...errors),
  };
}

/**
 * The model's tokenizer in pure JS, as the gateway ran it per input before the estimate. Its
 * published declarations use extensionless relative imports, which NodeNext resolution cannot
 * follow, so the slice used here is stated.
 */
function modelTokenizer(dir: string): { count(text: string): number } {
  const { Tokenizer } = hf as unknown as {
    Tokenizer: new (json: object, config: object) => { encode(text: string): { ids: number[] } };
  };
  const read = (name: string): object =>
    JSON.parse(readFileSync(join(dir, name), "utf8")) as object;
  const tokenizer = new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
  return { count: (text) => tokenizer.encode(text).ids.length };
}

const tokenizer = time(modelTokenizer(values["model-dir"]));
const fresh = new ShapeEstimate();
const uncalibrated = time(fresh);
const calibrated = new ShapeEstimate();
for (const [i, t] of texts.entries()) {
  // Counts over the model's limit come back truncated from the sidecar and teach nothing.
  calibrated.observe(t, tokenizer.tokens[i] ?? 0, (tokenizer.tokens[i] ?? 0) > MAX_TOKENS);
}
const result = {
  scenario: "annotator-cost",
  items: texts.length,
  rounds,
  tokenizer: { us_per_item: tokenizer.us_per_item, us_per_token: tokenizer.us_per_token },
  estimate: { us_per_item: uncalibrated.us_per_item, us_per_token: uncalibrated.us_per_token },
  uncalibrated_vs_tokenizer: errorsAgainst(tokenizer.tokens, uncalibrated.tokens),
  calibrated_rates: calibrated.rates,
  calibrated_vs_tokenizer: errorsAgainst(tokenizer.tokens, time(calibrated).tokens),
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
