/**
 * Where one request's time goes on an idle cluster: sends sequential single-input embedding
 * requests to a running ingress and reports the median and p90 of each `Server-Timing` phase,
 * plus each phase's share of the total. Writes JSON to `--out` (default stdout).
 *
 *   node --import tsx tools/bench/latency-breakdown.ts --url http://127.0.0.1:8080 --requests 200 --out result.json
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8080" },
    model: { type: "string", default: "sentence-transformers/all-MiniLM-L6-v2" },
    requests: { type: "string", default: "200" },
    warmup: { type: "string", default: "20" },
    out: { type: "string" },
  },
});
const requests = Number(values.requests);
const warmup = Number(values.warmup);

async function once(i: number): Promise<Record<string, number>> {
  const res = await fetch(`${values.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: values.model,
      input: [`request ${i}: how long does one embedding take?`],
    }),
  });
  if (res.status !== 200) throw new Error(`request ${i}: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  const phases: Record<string, number> = {};
  for (const part of (res.headers.get("server-timing") ?? "").split(",")) {
    const match = /^\s*(\w+);dur=([\d.]+)/.exec(part);
    if (match?.[1] !== undefined && match[2] !== undefined) phases[match[1]] = Number(match[2]);
  }
  return phases;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

for (let i = 0; i < warmup; i++) await once(-i - 1);
const samples: Record<string, number>[] = [];
for (let i = 0; i < requests; i++) samples.push(await once(i));

const phases = ["annotate", "queue", "batch", "compute", "total"];
const summary = Object.fromEntries(
  phases.map((phase) => {
    const sorted = samples.map((s) => s[phase] ?? NaN).sort((a, b) => a - b);
    return [phase, { p50_ms: quantile(sorted, 0.5), p90_ms: quantile(sorted, 0.9) }];
  }),
);
const total = summary["total"]?.p50_ms ?? NaN;
const result = {
  scenario: "latency-breakdown",
  url: values.url,
  model: values.model,
  requests,
  phases: summary,
  share_of_total_p50: Object.fromEntries(
    phases.filter((p) => p !== "total").map((p) => [p, (summary[p]?.p50_ms ?? NaN) / total]),
  ),
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
