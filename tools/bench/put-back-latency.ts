/**
 * Put-back latency, NAK versus the machine-local queue: the time from a worker putting an item
 * back to that item starting in a batch again, measured per item from the workers' own debug
 * lines (both clocks are this machine's). Two simulated workers serve MiniLM; bursts of
 * mixed-length requests arrive while they are idle, each worker pulls more than its batch
 * (a small padded-token ceiling) can take, and puts the rest back: with NAK over JetStream,
 * with the local queue through its Unix socket. Both modes run alternately in one session.
 *
 *   node --import tsx tools/bench/put-back-latency.ts --bursts 30 --burst 24 --repeats 2 --out put-back.json
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import {
  MODEL,
  quantile,
  startSimCluster,
  textOfTokens,
  type BatchStarted,
  type SimCluster,
} from "./sim-cluster.js";

const { values } = parseArgs({
  options: {
    bursts: { type: "string", default: "30" },
    burst: { type: "string", default: "24" },
    "interval-ms": { type: "string", default: "600" },
    "max-padded-tokens": { type: "string", default: "512" },
    repeats: { type: "string", default: "2" },
    out: { type: "string" },
  },
});
const bursts = Number(values.bursts);
const burst = Number(values.burst);
const intervalMs = Number(values["interval-ms"]);

/** Deterministic lengths, so both modes see the same work. */
function lengths(n: number): number[] {
  let x = 12345;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 8 + (x % 113);
  });
}

async function load(cluster: SimCluster): Promise<void> {
  const sizes = lengths(bursts * burst);
  const calls: Promise<unknown>[] = [];
  for (let b = 0; b < bursts; b++) {
    for (let i = 0; i < burst; i++) {
      const tokens = sizes[b * burst + i] ?? 16;
      calls.push(
        cluster.gateway.embed(
          { model: MODEL, inputs: [textOfTokens(tokens, `b${b}.${i}`)] },
          ROOT_CONTEXT,
        ),
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  await Promise.all(calls);
}

interface Summary {
  readonly samples: number;
  /** The fast end: a taker that was idle, so the hand-off mechanism itself. */
  readonly p10_ms: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly mean_ms: number;
}

function summarize(latenciesUs: number[]): Summary {
  const sorted = [...latenciesUs].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    samples: sorted.length,
    p10_ms: quantile(sorted, 0.1) / 1000,
    p50_ms: quantile(sorted, 0.5) / 1000,
    p90_ms: quantile(sorted, 0.9) / 1000,
    mean_ms: mean / 1000,
  };
}

async function measure(mode: "nak" | "local") {
  const cluster = await startSimCluster({
    workers: 2,
    localQueue: mode === "local",
    workerEnv: { SHOAL_BATCH_MAX_PADDED_TOKENS: values["max-padded-tokens"] },
  });
  try {
    await load(cluster);
  } finally {
    await cluster.stop();
  }
  const starts = new Map<number, BatchStarted[]>();
  for (const b of cluster.batches) {
    for (const s of b.seqs) {
      const list = starts.get(s) ?? [];
      list.push(b);
      starts.set(s, list);
    }
  }
  const other: number[] = [];
  const all: number[] = [];
  let unmatched = 0;
  for (const p of cluster.putBacks) {
    for (const s of p.seqs) {
      const next = (starts.get(s) ?? [])
        .filter((b) => b.atUs >= p.atUs)
        .sort((a, b) => a.atUs - b.atUs)[0];
      if (next === undefined) {
        unmatched++;
        continue;
      }
      all.push(next.atUs - p.atUs);
      if (next.worker !== p.worker) other.push(next.atUs - p.atUs);
    }
  }
  return {
    mode,
    requests: bursts * burst,
    batches: cluster.batches.length,
    put_back_items: all.length + unmatched,
    via_local_queue: cluster.putBacks.reduce((n, p) => n + p.local, 0),
    via_nak: cluster.putBacks.reduce((n, p) => n + p.naked, 0),
    unmatched,
    to_another_worker: summarize(other),
    to_any_worker: summarize(all),
  };
}

const runs = [];
for (let r = 0; r < Number(values.repeats); r++) {
  runs.push(await measure("nak"));
  runs.push(await measure("local"));
}
const result = {
  scenario: "put-back-latency",
  workers: 2,
  bursts,
  burst,
  interval_ms: intervalMs,
  max_padded_tokens: Number(values["max-padded-tokens"]),
  runs,
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
