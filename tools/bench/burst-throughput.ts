/**
 * Saturation throughput of a running cluster: keeps `--concurrency` single-input embedding
 * requests in flight (closed loop) until `--requests` are answered, and reports requests/s,
 * input tokens/s and latency percentiles. A closed loop measures capacity at saturation, not
 * the knee (that needs the open-loop load generator); it is the right tool to compare two worker
 * settings side by side on the same machine.
 *
 *   node --import tsx tools/bench/burst-throughput.ts --url http://127.0.0.1:8080 --requests 2000 --concurrency 128 --out burst.json
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8080" },
    model: { type: "string", default: "sentence-transformers/all-MiniLM-L6-v2" },
    requests: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "128" },
    label: { type: "string", default: "" },
    out: { type: "string" },
  },
});
const total = Number(values.requests);
const concurrency = Number(values.concurrency);
const latencies: number[] = [];
let tokens = 0;
let next = 0;

async function client(): Promise<void> {
  while (next < total) {
    const i = next++;
    const started = performance.now();
    const res = await fetch(`${values.url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: values.model,
        input: [`burst ${i}: small models, many requests`],
      }),
    });
    if (res.status !== 200) throw new Error(`request ${i}: HTTP ${res.status} ${await res.text()}`);
    tokens += ((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    latencies.push(performance.now() - started);
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: concurrency }, () => client()));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const q = (p: number): number =>
  latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
const result = {
  scenario: "burst-throughput",
  label: values.label,
  requests: total,
  concurrency,
  seconds,
  requests_per_s: total / seconds,
  tokens_per_s: tokens / seconds,
  latency_ms: { p50: q(0.5), p90: q(0.9), p99: q(0.99) },
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
