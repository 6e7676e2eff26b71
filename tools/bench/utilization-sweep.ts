/**
 * Accelerator utilization and batch fill at the knee, on simulated accelerators: 8 workers
 * (one simulated sidecar each) on this machine, open-loop Poisson arrivals of single-input
 * MiniLM requests of mixed length (8–250 tokens), stepped through `--rates`. Per step: offered
 * and answered rate, p50/p99 latency, utilization (sidecar busy time / (workers × wall), from
 * `stats`), and the batch fill ratios the workers logged (padded tokens / the batch's
 * latency-sized budget; real tokens / padded tokens). The knee is the highest rate whose p99
 * stays within `--slo-ms` while answered throughput still keeps up with the offered load.
 *
 *   node --import tsx tools/bench/utilization-sweep.ts --rates 50,100,150,200,250,300 --seconds 10 --out sweep.json
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { MODEL, quantile, startSimCluster, textOfTokens } from "./sim-cluster.js";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "8" },
    rates: { type: "string", default: "50,100,150,200,250,300" },
    seconds: { type: "string", default: "10" },
    "slo-ms": { type: "string", default: "1000" },
    "local-queue": { type: "string", default: "on" },
    out: { type: "string" },
  },
});
const workers = Number(values.workers);
const seconds = Number(values.seconds);
const sloMs = Number(values["slo-ms"]);

let seed = 42;
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
}

const cluster = await startSimCluster({ workers, localQueue: values["local-queue"] === "on" });
const steps = [];
try {
  for (const rate of values.rates.split(",").map(Number)) {
    const latencies: number[] = [];
    let failed = 0;
    const failures = new Map<string, number>();
    const calls: Promise<void>[] = [];
    const batchesBefore = cluster.batches.length;
    const busyBefore = await cluster.busyUs();
    const started = performance.now();
    const end = started + seconds * 1000;
    let next = started;
    let sent = 0;
    while (next < end) {
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const tokens = 8 + Math.floor(random() * 243);
      const t0 = performance.now();
      calls.push(
        cluster.gateway
          .embed({ model: MODEL, inputs: [textOfTokens(tokens, `r${rate}.${sent}`)] }, ROOT_CONTEXT)
          .then(
            () => {
              latencies.push(performance.now() - t0);
            },
            (err: unknown) => {
              failed++;
              const name = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
              failures.set(name, (failures.get(name) ?? 0) + 1);
            },
          ),
      );
      sent++;
      next += (-Math.log(1 - random()) / rate) * 1000;
    }
    const wallMs = performance.now() - started;
    const busyUs = (await cluster.busyUs()) - busyBefore;
    const windowBatches = cluster.batches.slice(batchesBefore);
    const answeredInWindow = latencies.length;
    await Promise.all(calls);
    latencies.sort((a, b) => a - b);
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    steps.push({
      offered_per_s: rate,
      sent,
      answered_in_window_per_s: answeredInWindow / (wallMs / 1000),
      failed,
      failures: Object.fromEntries(failures),
      latency_ms: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) },
      utilization: busyUs / 1000 / (workers * wallMs),
      batches: windowBatches.length,
      mean_batch_inputs: mean(windowBatches.map((b) => b.inputs)),
      fill_padded_of_budget: mean(windowBatches.map((b) => b.paddedTokens / b.budgetPaddedTokens)),
      fill_real_of_padded: mean(windowBatches.map((b) => b.realTokens / b.paddedTokens)),
    });
    console.error(JSON.stringify(steps.at(-1)));
  }
} finally {
  await cluster.stop();
}
const keeping = steps.filter(
  (s) =>
    s.failed === 0 &&
    s.latency_ms.p99 <= sloMs &&
    s.answered_in_window_per_s >= 0.9 * s.offered_per_s,
);
const knee = keeping.at(-1);
const result = {
  scenario: "utilization-sweep",
  workers,
  seconds_per_step: seconds,
  slo_ms: sloMs,
  local_queue: values["local-queue"],
  knee: knee ?? null,
  steps,
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
