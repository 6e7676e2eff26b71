/**
 * What annotation costs per item, and how far the fallback estimate is from the model's own
 * tokenizer: counts tokens for the reference fixture's sentences (short, long, non-ASCII,
 * emoji) with the exact counter and the estimate, and times both. Writes JSON to `--out`.
 *
 *   node --import tsx tools/bench/annotator-cost.ts --model-dir ~/.cache/shoal/models/all-minilm-l6-v2 --out annotator.json
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { estimatingTokenCounter, loadTokenCounter, type TokenCounter } from "@shoal/annotation";

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

function time(counter: TokenCounter): {
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

const exact = time(await loadTokenCounter(values["model-dir"]));
const estimate = time(estimatingTokenCounter());
const errors = exact.tokens.map((e, i) => Math.abs((estimate.tokens[i] ?? 0) - e) / e);
const result = {
  scenario: "annotator-cost",
  items: texts.length,
  rounds,
  exact: { us_per_item: exact.us_per_item, us_per_token: exact.us_per_token },
  estimate: { us_per_item: estimate.us_per_item, us_per_token: estimate.us_per_token },
  estimate_vs_exact: {
    mean_abs_pct_error: (100 * errors.reduce((a, b) => a + b, 0)) / errors.length,
    max_abs_pct_error: 100 * Math.max(...errors),
  },
  exact_items_per_core_second: 1e6 / exact.us_per_item,
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
