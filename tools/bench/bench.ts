/**
 * Shoal's load bench: offers a workload (tools/bench/workloads/*.json, format in
 * libs/loadgen/README.md) to a cluster open-loop, step by step, finds the knee of each mode and
 * writes `<out>/result.json` with `throughput.svg` and `latency.svg`.
 *
 *   npm run bench -- --scenario minilm --out bench-out
 *   npm run bench -- --scenario fleet --compare router --out bench-out
 *
 * Scenarios:
 * - `minilm`: the real cluster on this machine (ingress, one worker, Candle MiniLM on the CPU,
 *   or with `--device cuda:0` on a GPU, fed by `--ingresses N` ingress processes that the load
 *   is spread over) over REST; the result also holds the sidecar's raw
 *   tokens/s on the same inputs, measured through the same sidecar after the sweep
 *   (`--raw-budget` padded tokens a batch, `--raw-in-flight` batches at once, by default as
 *   many as the bundle gives MiniLM model threads), and the cluster's tokens/s at the knee as
 *   a share of it.
 * - `smollm2`: the real cluster generating with SmolLM2 on this CPU; the workload may name LoRA
 *   adapters (`base:adapter`), which are published to the registry before the sweep
 *   (`--workload tools/bench/workloads/smollm2-lora.json`).
 * - `fleet`: simulated models on simulated accelerators, many small embedding requests; by
 *   default 8 models on 32 accelerators (replicas by popularity), or the fleet the workload's
 *   `fleet` section describes (accelerator speeds and memory, models sharing accelerators,
 *   static or dynamic residency: libs/loadgen/README.md). `--compare router` adds the top-down
 *   router on the same workers for every policy (`--policies`) and view refresh interval
 *   (`--refresh-ms`; once for the policies that never read the view), with a replica
 *   autoscaler when residency is dynamic (`--target-lag` items per replica; by default each
 *   configuration runs twice, `--router-residency lag,fill`: resized on lag alone, and with
 *   free memory shared among the models by arrival rate too), and reports
 *   `pull_over_router`: pull's knee over the best router configuration's, and how the best did
 *   against the random one. `--suite` runs every shipped fleet scenario in one command.
 * - `overhead`: what Shoal's own request path costs (tools/bench/overhead): every process of
 *   the quickstart's path with a simulated model whose batches cost nothing, single-input
 *   embeddings from the compiled open-loop generator over `--protocols rest,grpc,msgpack`;
 *   reports each protocol's knee and CPU µs per request of every process (`--rates 100,200,…`
 *   replaces the default steps, `--step-seconds` their length, `--ingresses N` runs ingress as
 *   N replicas on one port, `--observed` runs it watched as in production: metrics scraped
 *   every 5 s and spans exported over OTLP at the default sampling).
 * - `fairness`: one tenant floods at ten times its request quota while another sends a steady
 *   load (tools/bench/fairness): the steady tenant's latency alone, beside the quota-limited
 *   flood, and beside the same flood without a quota (`--phase-seconds` each phase's length).
 *
 * `--workload` replaces the scenario's workload file and `--steps N` keeps only its first N
 * rates (a quick look); each sweep stops two steps past its knee. `--bundle <file>` runs the
 * services with that config bundle, `--bundle none` with the untuned defaults; by default
 * `minilm` runs with the bundle the services pick for this hardware (`bundles/cpu.json`) and
 * `fleet` with `bundles/sim-fleet.json`, tuned for its simulated accelerators. `--target`
 * picks how requests reach ingress: `rest` (OpenAI-compatible JSON, the default), `grpc`
 * (InferenceService over HTTP/2) or `msgpack` (`@shoal/client`, embeddings only).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { compileWorkload, planStep, WorkloadError, type Workload } from "@shoal/loadgen";
import { bundleFromEnv } from "@shoal/process";
import { ROUTING_POLICIES } from "@shoal/router";
import { compareFleet, suiteLine } from "./fleet-compare.js";
import { rawEmbedThroughput } from "./raw-denominator.js";
import { writeResult } from "./result.js";
import {
  defaultBundle,
  FLEET_AUTOSCALE,
  FLEET_SUITE,
  fleetSetup,
  fleetWorkloadPath,
  SCENARIOS,
  startScenario,
  stopOnSignal,
  warm,
  workloadPath,
} from "./scenarios.js";
import { sweep, type ModeResult } from "./sweep.js";
import { sender, TARGETS } from "./targets/index.js";
import { parseOrExit } from "./cli.js";
import { benchOverhead, OVERHEAD_DEFAULTS } from "./overhead/overhead.js";
import { benchFairness, FAIRNESS_DEFAULTS } from "./fairness/fairness.js";
import { PROTOCOLS } from "./overhead/bodies.js";

const usage =
  "usage: npm run bench -- --scenario minilm|fleet|smollm2|overhead|fairness --out <dir> [--compare router] " +
  "[--workload <file> | --suite] [--steps N] [--policies a,b] [--refresh-ms 1,10,100] [--accelerators 32] " +
  "[--bundle <file>|none] [--target rest|grpc|msgpack] [--device cpu|cuda:N] " +
  "[--target-lag N] [--router-residency lag,fill] [--ingresses N] [--raw-budget tokens] [--raw-in-flight N] " +
  "[--protocols rest,grpc,msgpack] [--rates 100,200] [--step-seconds N] [--observed] [--phase-seconds N]";
const { values } = parseOrExit(
  () =>
    parseArgs({
      options: {
        scenario: { type: "string" },
        workload: { type: "string" },
        steps: { type: "string" },
        compare: { type: "string" },
        policies: { type: "string", default: ROUTING_POLICIES.join(",") },
        "refresh-ms": { type: "string", default: "1,10,100" },
        accelerators: { type: "string" },
        suite: { type: "boolean", default: false },
        "target-lag": { type: "string" },
        "router-residency": { type: "string", default: "lag,fill" },
        bundle: { type: "string" },
        target: { type: "string", default: "rest" },
        device: { type: "string", default: "cpu" },
        ingresses: { type: "string", default: "1" },
        // 4k padded tokens is the budget at which the raw bench measured this CPU's best.
        "raw-budget": { type: "string", default: "4096" },
        "raw-in-flight": { type: "string" },
        out: { type: "string" },
        protocols: { type: "string", default: PROTOCOLS.join(",") },
        rates: { type: "string" },
        "step-seconds": { type: "string", default: String(OVERHEAD_DEFAULTS.stepSeconds) },
        observed: { type: "boolean", default: false },
        "phase-seconds": { type: "string", default: String(FAIRNESS_DEFAULTS.seconds) },
      },
    }),
  usage,
);
if (values.scenario === "fairness" && values.out !== undefined) {
  const seconds = Number(values["phase-seconds"]);
  if (!(seconds > 0)) {
    console.error(`--phase-seconds takes a positive number\n${usage}`);
    process.exit(2);
  }
  await mkdir(values.out, { recursive: true });
  const result = await benchFairness({ ...FAIRNESS_DEFAULTS, out: values.out, seconds });
  console.error(
    `[bench] fairness: steady p99 ${result.alone.steady.latency_ms.p99.toFixed(1)} ms alone, ` +
      `${result.quota.steady.latency_ms.p99.toFixed(1)} ms beside the limited flood ` +
      `(${result.steady_p99_ratio.toFixed(2)}×)` +
      (result.unlimited === undefined
        ? ""
        : `, ${result.unlimited.steady.latency_ms.p99.toFixed(1)} ms beside an unlimited one`) +
      `; wrote ${values.out}/result.json`,
  );
  process.exit(0);
}
if (values.scenario === "overhead" && values.out !== undefined) {
  const protocols = values.protocols.split(",").map((name) => {
    const protocol = PROTOCOLS.find((p) => p === name);
    if (protocol === undefined) {
      console.error(`unknown protocol ${name}; protocols: ${PROTOCOLS.join(", ")}\n${usage}`);
      process.exit(2);
    }
    return protocol;
  });
  const rates = values.rates?.split(",").map(Number) ?? OVERHEAD_DEFAULTS.rates;
  const stepSeconds = Number(values["step-seconds"]);
  if (rates.some((r) => !(r > 0)) || !(stepSeconds > 0)) {
    console.error(`--rates and --step-seconds take positive numbers\n${usage}`);
    process.exit(2);
  }
  const ingressProcesses = Number(values.ingresses);
  if (!Number.isInteger(ingressProcesses) || ingressProcesses < 1) {
    console.error(`--ingresses takes a positive integer\n${usage}`);
    process.exit(2);
  }
  await mkdir(values.out, { recursive: true });
  await benchOverhead({
    ...OVERHEAD_DEFAULTS,
    out: values.out,
    protocols,
    rates: [...rates].sort((a, b) => a - b),
    stepSeconds,
    ingressProcesses,
    observed: values.observed,
  });
  process.exit(0);
}
const scenario = SCENARIOS.find((s) => s === values.scenario);
if (scenario === undefined || values.out === undefined) {
  console.error(usage);
  process.exit(2);
}
if (values.compare !== undefined && (values.compare !== "router" || scenario !== "fleet")) {
  console.error(`--compare router is the only comparison, and for the fleet scenario\n${usage}`);
  process.exit(2);
}
if (values.suite && (scenario !== "fleet" || values.workload !== undefined)) {
  console.error(
    `--suite runs the fleet scenario over its shipped workloads; no --workload\n${usage}`,
  );
  process.exit(2);
}
const ingresses = Number(values.ingresses);
if ((values.device !== "cpu" || ingresses !== 1) && scenario !== "minilm") {
  console.error(
    `--device is for the minilm scenario, --ingresses for minilm and overhead\n${usage}`,
  );
  process.exit(2);
}
if (!Number.isSafeInteger(ingresses) || ingresses < 1) {
  console.error(`--ingresses must be an integer ≥ 1\n${usage}`);
  process.exit(2);
}
const target = TARGETS.find((t) => t === values.target);
if (target === undefined) {
  console.error(`unknown target ${values.target}; targets: ${TARGETS.join(", ")}\n${usage}`);
  process.exit(2);
}
const policies = values.policies.split(",").map((p) => {
  const policy = ROUTING_POLICIES.find((known) => known === p);
  if (policy === undefined) {
    console.error(`unknown policy ${p}; policies: ${ROUTING_POLICIES.join(", ")}`);
    process.exit(2);
  }
  return policy;
});
const refreshes = values["refresh-ms"].split(",").map(Number);
const autoscalers = values["router-residency"].split(",").map((r) => {
  if (r !== "lag" && r !== "fill") {
    console.error(`--router-residency takes lag, fill or both, got "${r}"\n${usage}`);
    process.exit(2);
  }
  return r;
});
/** A workload file, or exit 2 with what is wrong with it (no stack trace for a bad file). */
async function loadWorkload(path: string): Promise<Workload> {
  try {
    return compileWorkload(JSON.parse(await readFile(path, "utf8")));
  } catch (err) {
    if (!(err instanceof WorkloadError || err instanceof SyntaxError)) throw err;
    console.error(`${path}: ${err.message}`);
    process.exit(2);
  }
}
const workload = await loadWorkload(values.workload ?? workloadPath(scenario));
const bundle = values.bundle ?? defaultBundle(scenario);
/** A workload's rates, the first `--steps` of them when given. */
function ratesOf(w: Workload): readonly number[] {
  return w.load.rates.slice(0, values.steps === undefined ? undefined : Number(values.steps));
}
const rates = ratesOf(workload);
const out = values.out;
await mkdir(out, { recursive: true });

let running: { stop(): Promise<void> } | undefined;
stopOnSignal(() => running);

const modes: Record<string, ModeResult> = {};

// The bundle the services will load, as they resolve it (the hardware's, unless named).
const loaded = await bundleFromEnv({
  SHOAL_DEVICE: values.device,
  ...(bundle === undefined ? {} : { SHOAL_BUNDLE: bundle }),
});
let extra: Record<string, unknown> = { target, bundle: loaded?.source.path ?? "none" };

if (scenario === "minilm") {
  const harness = await startScenario(scenario, workload, {
    bundle,
    device: values.device,
    ingresses,
  });
  running = harness;
  try {
    const send = sender(target, harness.baseUrls);
    await warm(send, workload);
    modes["pull"] = await sweep("pull", harness, workload, rates, send);
    if (harness.sidecar === undefined) throw new Error("minilm: the harness has no sidecar");
    // The same sidecar alone on inputs drawn like the sweep's.
    const inputs = planStep(workload, 999, 200, 10);
    const raw = await rawEmbedThroughput(
      harness.sidecar,
      "all-minilm-l6-v2",
      inputs,
      Number(values["raw-budget"]),
      20,
      // The sidecar's capacity needs a batch for each of the model's threads.
      Number(
        values["raw-in-flight"] ??
          loaded?.bundle.models.get("sentence-transformers/all-MiniLM-L6-v2")?.modelThreads ??
          1,
      ),
    );
    extra = {
      ...extra,
      device: values.device,
      ingresses,
      sidecar_raw: raw,
      cluster_over_raw: (modes["pull"].knee_tokens_per_s || 0) / raw.tokens_per_s,
    };
  } finally {
    await harness.stop();
  }
} else if (scenario === "smollm2") {
  const harness = await startScenario(scenario, workload, { bundle });
  running = harness;
  try {
    const send = sender(target, harness.baseUrls);
    await warm(send, workload);
    modes["pull"] = await sweep("pull", harness, workload, rates, send);
  } finally {
    await harness.stop();
  }
} else {
  const accelerators = values.accelerators === undefined ? undefined : Number(values.accelerators);
  const workloads = values.suite
    ? await Promise.all(FLEET_SUITE.map(async (name) => loadWorkload(fleetWorkloadPath(name))))
    : [workload];
  // A fleet the workload cannot describe is refused before any cluster starts.
  for (const w of workloads) {
    try {
      fleetSetup(w, accelerators, loaded?.bundle);
    } catch (err) {
      console.error(`workload ${w.name}: ${(err as Error).message}`);
      process.exit(2);
    }
  }
  const summary: Record<string, unknown>[] = [];
  for (const w of workloads) {
    const dir = values.suite ? join(out, w.name) : out;
    await mkdir(dir, { recursive: true });
    const wRates = ratesOf(w);
    const outcome = await compareFleet({
      workload: w,
      rates: wRates,
      bundle,
      loadedBundle: loaded?.bundle,
      accelerators,
      compare: values.compare === "router",
      policies,
      refreshes,
      autoscalers,
      target,
      ...(values["target-lag"] === undefined
        ? {}
        : { autoscale: { ...FLEET_AUTOSCALE, targetLag: Number(values["target-lag"]) } }),
      running: (h) => (running = h),
    });
    const result = await writeResult(dir, scenario, w, wRates, outcome.modes, {
      ...extra,
      ...outcome.extra,
    });
    summary.push(suiteLine(result));
    console.error(`[bench] wrote ${join(dir, "result.json")}, throughput.svg, latency.svg`);
  }
  if (values.suite) {
    await writeFile(
      join(out, "suite.json"),
      JSON.stringify({ scenarios: summary }, null, 2) + "\n",
    );
    console.error(`[bench] wrote ${join(out, "suite.json")}`);
  }
  process.exit(0);
}

await writeResult(out, scenario, workload, rates, modes, extra);
console.error(`[bench] wrote ${join(out, "result.json")}, throughput.svg, latency.svg`);
