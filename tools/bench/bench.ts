/**
 * Shoal's load bench: offers a workload (tools/bench/workloads/*.json, format in
 * libs/loadgen/README.md) to a cluster open-loop, step by step, finds the knee and writes
 * `<out>/result.json` with `throughput.svg` and `latency.svg`.
 *
 *   npm run bench -- --scenario minilm --out bench-out
 *
 * Scenarios:
 * - `minilm`: the real cluster on this machine (ingress, one worker, Candle MiniLM on CPU) over
 *   REST; the result also holds the sidecar's raw tokens/s on the same inputs, measured through
 *   the same sidecar after the sweep, and the cluster's tokens/s at the knee as a share of it.
 *
 * `--workload` replaces the scenario's workload file, `--steps` keeps only the first N rates
 * (a quick look), and stepping stops after two steps past the knee.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  compileWorkload,
  findKnee,
  kneeMiss,
  lineChart,
  planStep,
  runStep,
  type StepProgress,
  type StepResult,
  type Workload,
} from "@shoal/loadgen";
import { repoRoot } from "@shoal/testing";
import type { Harness } from "./harness/harness.js";
import { startRealCluster } from "./harness/real-cluster.js";
import { rawEmbedThroughput, type RawThroughput } from "./raw-denominator.js";
import { restSender } from "./targets/rest.js";

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";

interface Scenario {
  readonly workload: string;
  start(): Promise<Harness>;
  /** The sidecar's raw speed on the scenario's inputs, when it has a real accelerator. */
  raw?(harness: Harness, workload: Workload): Promise<RawThroughput>;
}

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  minilm: {
    workload: "minilm.json",
    start: () => startRealCluster({ models: [MINILM] }),
    async raw(harness, workload) {
      if (harness.sidecar === undefined) throw new Error("minilm: the harness has no sidecar");
      // Inputs drawn like the sweep's.
      const inputs = planStep(workload, 999, 200, 10);
      // 4k padded tokens: the budget at which the raw bench measured this CPU's best.
      return rawEmbedThroughput(harness.sidecar, "all-minilm-l6-v2", inputs, 4096, 20);
    },
  },
};

const { values } = parseArgs({
  options: {
    scenario: { type: "string" },
    workload: { type: "string" },
    steps: { type: "string" },
    out: { type: "string" },
  },
});
const scenario = SCENARIOS[values.scenario ?? ""];
if (scenario === undefined || values.out === undefined) {
  console.error(
    `usage: npm run bench -- --scenario ${Object.keys(SCENARIOS).join("|")} --out <dir> [--workload <file>] [--steps N]`,
  );
  process.exit(2);
}
const workloadPath =
  values.workload ?? join(repoRoot(), "tools", "bench", "workloads", scenario.workload);
const workload = compileWorkload(JSON.parse(await readFile(workloadPath, "utf8")));
const rates = workload.load.rates.slice(
  0,
  values.steps === undefined ? undefined : Number(values.steps),
);
const out = values.out;
await mkdir(out, { recursive: true });

function progress(p: StepProgress): void {
  const line =
    `[bench] ${p.offeredRps} req/s  ${p.elapsedS.toFixed(0)}/${workload.load.stepSeconds}s  ` +
    `sent ${p.sent}  answered ${p.answered}  failed ${p.failed}  in flight ${p.inFlight}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${line}\u001b[K`);
  else if (Math.round(p.elapsedS) % 5 === 0) console.error(line);
}

const harness = await scenario.start();
const steps: StepResult[] = [];
let raw: RawThroughput | undefined;
try {
  const send = restSender(harness.baseUrl);
  // One request per model first, so no step pays for a first load or a cold tokenizer.
  for (const entry of workload.mix) {
    for (const model of entry.models) {
      await send(
        { atMs: 0, function: entry.function, model, inputTokens: [8], maxTokens: 1, stream: false },
        AbortSignal.timeout(300_000),
      );
    }
  }
  let misses = 0;
  for (const [i, rate] of rates.entries()) {
    const busyBefore = await harness.busyUs();
    const started = performance.now();
    const result = await runStep({
      offeredRps: rate,
      plan: planStep(workload, i, rate, workload.load.stepSeconds),
      seconds: workload.load.stepSeconds,
      warmupSeconds: workload.load.warmupSeconds,
      drainMs: Math.max(10_000, 5 * workload.sloP99Ms),
      send,
      onProgress: progress,
    });
    const wallUs = (performance.now() - started) * 1000;
    const step = {
      ...result,
      utilization: ((await harness.busyUs()) - busyBefore) / (harness.accelerators * wallUs),
    };
    steps.push(step);
    if (process.stderr.isTTY) process.stderr.write("\n");
    console.error(
      `[bench] ${rate} req/s: achieved ${step.achievedRps.toFixed(1)} req/s, ` +
        `${step.achievedTokensPerS.toFixed(0)} tokens/s, p99 ${step.latencyMs.p99.toFixed(0)} ms, ` +
        `failed ${step.failed}, utilization ${(step.utilization * 100).toFixed(0)} %`,
    );
    misses = kneeMiss(step, { sloP99Ms: workload.sloP99Ms }) === undefined ? 0 : misses + 1;
    if (misses >= 2) break;
  }
  raw = await scenario.raw?.(harness, workload);
} finally {
  await harness.stop();
}

/** A step as result.json writes it, in the file's snake_case. */
function stepJson(s: StepResult): Record<string, unknown> {
  return {
    offered_rps: s.offeredRps,
    sent: s.sent,
    sent_rps: s.sentRps,
    achieved_rps: s.achievedRps,
    achieved_tokens_per_s: s.achievedTokensPerS,
    failed: s.failed,
    latency_ms: s.latencyMs,
    utilization: s.utilization ?? null,
  };
}

const knee = findKnee(steps, { sloP99Ms: workload.sloP99Ms });
const at = knee.step;
const result = {
  scenario: values.scenario,
  workload: workload.name,
  slo_p99_ms: workload.sloP99Ms,
  step_seconds: workload.load.stepSeconds,
  warmup_seconds: workload.load.warmupSeconds,
  knee_rps: at?.achievedRps ?? 0,
  knee_offered_rps: at?.offeredRps ?? 0,
  knee_tokens_per_s: at?.achievedTokensPerS ?? 0,
  p50_ms_at_knee: at?.latencyMs.p50 ?? null,
  p90_ms_at_knee: at?.latencyMs.p90 ?? null,
  p99_ms_at_knee: at?.latencyMs.p99 ?? null,
  utilization_at_knee: at?.utilization ?? null,
  first_miss:
    knee.firstMiss === undefined
      ? null
      : { offered_rps: steps[knee.firstMiss.index]?.offeredRps, reason: knee.firstMiss.reason },
  ...(raw === undefined
    ? {}
    : { sidecar_raw: raw, cluster_over_raw: (at?.achievedTokensPerS ?? 0) / raw.tokens_per_s }),
  steps: steps.map(stepJson),
};
await writeFile(join(out, "result.json"), JSON.stringify(result, null, 2) + "\n");
const mark =
  at === undefined ? undefined : { x: at.offeredRps, label: `knee ${at.offeredRps} req/s` };
const offered = (f: (s: StepResult) => number): [number, number][] =>
  steps.map((s) => [s.offeredRps, f(s)]);
await writeFile(
  join(out, "throughput.svg"),
  lineChart({
    title: `${workload.name}: throughput vs offered load`,
    xLabel: "offered load (requests/s)",
    yLabel: "achieved (requests/s)",
    series: [
      { name: "achieved", points: offered((s) => s.achievedRps) },
      { name: "offered", points: offered((s) => s.offeredRps) },
    ],
    ...(mark === undefined ? {} : { mark }),
  }),
);
await writeFile(
  join(out, "latency.svg"),
  lineChart({
    title: `${workload.name}: latency vs offered load`,
    xLabel: "offered load (requests/s)",
    yLabel: "latency (ms)",
    series: [
      { name: "p50", points: offered((s) => s.latencyMs.p50) },
      { name: "p90", points: offered((s) => s.latencyMs.p90) },
      { name: "p99", points: offered((s) => s.latencyMs.p99) },
    ],
    hline: { y: workload.sloP99Ms, label: `SLO p99 ${workload.sloP99Ms} ms` },
    ...(mark === undefined ? {} : { mark }),
  }),
);
console.error(`[bench] wrote ${join(out, "result.json")}, throughput.svg, latency.svg`);
