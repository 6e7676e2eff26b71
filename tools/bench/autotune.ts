/**
 * Autotune: finds the serving parameters with the highest knee for a scenario's models on this
 * hardware and writes them as a config bundle (libs/config/src/bundle.ts) the cluster loads at
 * start.
 *
 *   npm run autotune -- --scenario minilm --bundle bundles/cpu.json --out tune-out
 *   npm run autotune -- --scenario fleet --bundle bundles/sim-fleet.json --out tune-out
 *
 * Each trial starts the scenario's cluster with a candidate bundle and sweeps the workload's
 * load steps (from two steps below the best knee so far, up to two steps past its own knee);
 * the search is coordinate descent over the parameters below (libs/loadgen/src/tune.ts), and a
 * candidate that beats the best is measured again before it is adopted.
 * Afterwards the untuned defaults and the tuned bundle are swept again, back to back over the
 * whole ramp, and those two knees are what the bundle and `<out>/result.json` report, with
 * `throughput.svg` and `latency.svg` of both.
 *
 * `--profile` names the bundle's hardware profile (default: the file's name); `--rates a,b,..`
 * replaces the workload's steps; `--params a,b` tunes only those parameters, keeping the
 * settings the bundle file already holds for the others; `--workload`
 * replaces the scenario's workload file. `--device cuda:0` tunes MiniLM on a GPU, where the
 * encoder's precision (`dtype`) is searched first; `--ingresses N` feeds it from N ingress
 * processes.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cpus } from "node:os";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { compileBundle, type ServingDefaults } from "@shoal/config";
import {
  compileWorkload,
  tune,
  type TuningParameter,
  type TuningScore,
  type TuningTrial,
  type Workload,
} from "@shoal/loadgen";
import {
  FLEET_ACCELERATORS,
  FLEET_COST,
  skewedReplicas,
  startScenario,
  stopOnSignal,
  warm,
  workloadPath,
} from "./scenarios.js";
import { writeCharts } from "./charts.js";
import { stepJson, sweep, type ModeResult } from "./sweep.js";
import { sender } from "./targets/index.js";
import { parseOrExit } from "./cli.js";

const DEFAULT_EDGES = [16, 32, 64, 128, 256, 512];

/**
 * What is tuned, in the order tuned, with the untuned default first: the batch cost budget
 * (the latency a batch is sized for, and its padded-token ceiling), then how batches are
 * filled (fill wait, fetch size, prefetch depth), then the length buckets parts are queued by.
 * The fleet's accelerators have a fixed cost per batch 1,000× their per-token cost, so its
 * budgets reach higher. The fleet also tunes its replicas per model: `placementSkew` places
 * the 32 accelerators in proportion to each model's popularity raised to it (1: in
 * proportion to its load), written into the bundle as each model's `replicas`.
 */
/** The scenarios autotune searches: generation's settings are not in a bundle yet. */
const TUNABLE = ["minilm", "fleet"] as const;
type Tunable = (typeof TUNABLE)[number];

const SPACES: Record<Tunable, readonly TuningParameter[]> = {
  minilm: [
    { name: "batchTargetMs", candidates: [250, 100, 500, 1000] },
    { name: "maxPaddedTokens", candidates: [16384, 4096, 2048] },
    { name: "maxFillWaitMs", candidates: [2, 0, 10] },
    { name: "fetchSize", candidates: [64, 16] },
    { name: "batchesInFlight", candidates: [1, 2] },
    { name: "bucketEdges", candidates: [DEFAULT_EDGES, [32, 128], [16, 24, 32, 48, 64, 96, 128]] },
  ],
  fleet: [
    { name: "batchTargetMs", candidates: [250, 500, 1000, 2000] },
    { name: "maxFillWaitMs", candidates: [2, 0, 10] },
    { name: "fetchSize", candidates: [64, 256] },
    { name: "batchesInFlight", candidates: [1, 2] },
    { name: "bucketEdges", candidates: [DEFAULT_EDGES, [32, 128]] },
    { name: "placementSkew", candidates: [1, 0.5, 1.5] },
  ],
};

/**
 * MiniLM on a GPU: the precision first (f16 runs the matrix products on tensor cores), then
 * a second batch in flight, so the GPU is not left waiting while the next batch is pulled and
 * tokenized. Short: a lent GPU comes with minutes, not hours, and the CPU space's budgets and
 * fill waits are sized for batches of tens of milliseconds, where a GPU batch takes a few.
 */
const GPU_MINILM: readonly TuningParameter[] = [
  { name: "dtype", candidates: ["f32", "f16"] },
  { name: "batchesInFlight", candidates: [1, 2] },
];

const usage =
  "usage: npm run autotune -- --scenario minilm|fleet --bundle <file> --out <dir> " +
  "[--profile name] [--rates a,b,...] [--params a,b] [--workload <file>] [--device cpu|cuda:N] " +
  "[--ingresses N]";
const { values } = parseOrExit(
  () =>
    parseArgs({
      options: {
        scenario: { type: "string" },
        bundle: { type: "string" },
        profile: { type: "string" },
        out: { type: "string" },
        rates: { type: "string" },
        params: { type: "string" },
        workload: { type: "string" },
        device: { type: "string", default: "cpu" },
        ingresses: { type: "string", default: "1" },
      },
    }),
  usage,
);
const scenario = TUNABLE.find((s) => s === values.scenario);
if (scenario === undefined || values.bundle === undefined || values.out === undefined) {
  console.error(usage);
  process.exit(2);
}
const device = values.device;
const gpu = device.startsWith("cuda");
const ingresses = Number(values.ingresses);
if ((device !== "cpu" || ingresses !== 1) && scenario !== "minilm") {
  console.error(`--device and --ingresses are for the minilm scenario\n${usage}`);
  process.exit(2);
}
if (!Number.isSafeInteger(ingresses) || ingresses < 1) {
  console.error(`--ingresses must be an integer ≥ 1\n${usage}`);
  process.exit(2);
}
const bundlePath = values.bundle;
const out = values.out;
const profile = values.profile ?? basename(bundlePath).replace(/\.json$/, "");
const space = (gpu ? GPU_MINILM : SPACES[scenario]).filter(
  (p) => values.params === undefined || values.params.split(",").includes(p.name),
);
const workload = compileWorkload(
  JSON.parse(await readFile(values.workload ?? workloadPath(scenario), "utf8")),
);
const rates = values.rates?.split(",").map(Number) ?? [...workload.load.rates];
if (rates.some((r, i) => !(r > 0) || (i > 0 && r <= (rates[i - 1] as number)))) {
  console.error(`--rates must be ascending positive numbers\n${usage}`);
  process.exit(2);
}
await mkdir(out, { recursive: true });

let running: { stop(): Promise<void> } | undefined;
stopOnSignal(() => running);

const models = workload.mix.flatMap((m) => m.models);

/**
 * The settings the bundle already holds, model by model: a search of some parameters
 * (`--params`) keeps the others as tuned before, rather than resetting them to defaults.
 */
const inherited: ReadonlyMap<string, ServingDefaults> = existsSync(bundlePath)
  ? compileBundle(JSON.parse(await readFile(bundlePath, "utf8")), bundlePath).models
  : new Map();
const command = `npm run autotune -- ${process.argv.slice(2).join(" ")}`;
const machine = `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores`;
const hardware =
  scenario === "fleet"
    ? `32 simulated accelerators (${FLEET_COST.fixedUs / 1000} ms per batch + ` +
      `${FLEET_COST.perPaddedTokenNs / 1e6} ms per padded token) on ${machine}`
    : gpu
      ? `${gpuName(device)} (${device}) with ${machine}`
      : machine;

/** What nvidia-smi calls the GPU `device` names, for the bundle's description. */
function gpuName(device: string): string {
  const index = device.split(":")[1] ?? "0";
  try {
    return execFileSync(
      "nvidia-smi",
      ["--query-gpu=name", "--format=csv,noheader", `--id=${index}`],
      { encoding: "utf8" },
    ).trim();
  } catch {
    return "unknown GPU";
  }
}

/**
 * What every trial's bundle carries besides the candidate: for the fleet, its accelerators'
 * batch cost, which is known exactly, as the workers' starting cost model. Without it a
 * worker's first batches are sized with a CPU-encoder guess and take seconds on these
 * accelerators, so a trial that starts its sweep near the knee would miss its first step for
 * that reason alone.
 */
const FIXED: Record<Tunable, Readonly<Record<string, unknown>>> = {
  minilm: {},
  fleet: {
    batchCostPrior: {
      fixedUs: FLEET_COST.fixedUs,
      perSequenceUs: 0,
      perPaddedTokenUs: FLEET_COST.perPaddedTokenNs / 1000,
    },
  },
};

/** A bundle document giving every model of the workload `config`. */
function bundleDoc(
  config: Readonly<Record<string, unknown>>,
  measured?: Record<string, unknown>,
): unknown {
  const { placementSkew, ...tuned } = config;
  const replicas =
    placementSkew === undefined
      ? undefined
      : skewedReplicas(workload, FLEET_ACCELERATORS, placementSkew as number);
  return {
    profile,
    description: hardware,
    ...(measured === undefined ? {} : { measured }),
    models: Object.fromEntries(
      models.map((id, i) => {
        const serving = {
          ...inherited.get(id),
          ...tuned,
          ...FIXED[scenario as Tunable],
          ...(replicas === undefined ? {} : { replicas: replicas[i] }),
        };
        return [id, { serving }];
      }),
    ),
  };
}

/** One sweep of the scenario with `bundle` (a file, or `none`) from rate index `from`. */
async function measureWith(
  label: string,
  bundle: string,
  from: number,
  w: Workload,
): Promise<ModeResult> {
  const harness = await startScenario(scenario as Tunable, w, { bundle, device, ingresses });
  running = harness;
  try {
    const send = sender("rest", harness.baseUrls);
    await warm(send, w);
    return await sweep(label, harness, w, rates, send, from);
  } finally {
    await harness.stop();
    running = undefined;
  }
}

const score = (m: ModeResult): TuningScore => ({ kneeRps: m.knee_rps, p99Ms: m.p99_ms_at_knee });
const trials: { config: Readonly<Record<string, unknown>>; mode: ModeResult }[] = [];

/** One trial: the scenario with `config` as its bundle, from two steps below the best knee. */
async function measure(
  config: Readonly<Record<string, unknown>>,
  best?: TuningScore,
): Promise<TuningScore> {
  const index = trials.length;
  const file = join(out, `trial-${index}.json`);
  await writeFile(file, JSON.stringify(bundleDoc(config), null, 2) + "\n");
  // Steps far below the best knee cannot decide against it, so a trial starts two steps
  // below: one to warm the workers' learned batch-cost model at a load it keeps up with (a
  // sweep that starts at the knee with a cold model misses its first step), one below the knee.
  const kneeIndex =
    best === undefined ? 0 : rates.findLastIndex((rate) => rate <= best.kneeRps * 1.05);
  const mode = await measureWith(`trial ${index}`, file, Math.max(0, kneeIndex - 2), workload);
  trials.push({ config, mode });
  return score(mode);
}

function report(trial: TuningTrial, index: number): void {
  const p99 = trial.score.p99Ms === null ? "-" : trial.score.p99Ms.toFixed(0);
  // A trial swept from below the best knee that misses its first step has no knee of its own.
  const first = trials[index]?.mode.steps[0]?.offeredRps;
  const knee =
    trial.score.kneeRps > 0 || first === undefined
      ? `knee ${trial.score.kneeRps.toFixed(1)} req/s, p99 ${p99} ms`
      : `missed its first step, ${first} req/s: knee below it`;
  console.error(
    `[autotune] trial ${index}${trial.confirmation === true ? " (repeat)" : ""} ` +
      `${JSON.stringify(trial.config)}: ${knee}` +
      (trial.adopted ? "  (best so far)" : ""),
  );
}

const outcome = await tune(space, measure, { onTrial: report });

// The two configurations side by side, over the whole ramp, one after the other.
const tunedFile = join(out, "tuned.json");
await writeFile(tunedFile, JSON.stringify(bundleDoc(outcome.best), null, 2) + "\n");
const untuned = await measureWith("untuned", "none", 0, workload);
const tuned = await measureWith("tuned", tunedFile, 0, workload);
const knee = (m: ModeResult): Record<string, unknown> => ({ ...m, steps: undefined });
const measured = {
  command,
  date: new Date().toISOString().slice(0, 10),
  scenario,
  workload: workload.name,
  slo_p99_ms: workload.sloP99Ms,
  untuned: knee(untuned),
  tuned: knee(tuned),
  tuned_over_untuned: untuned.knee_rps > 0 ? tuned.knee_rps / untuned.knee_rps : null,
};
await writeFile(bundlePath, JSON.stringify(bundleDoc(outcome.best, measured), null, 2) + "\n");

const result = {
  ...measured,
  bundle: bundlePath,
  parameters: space,
  best: outcome.best,
  trials: trials.map((t) => ({
    config: t.config,
    ...knee(t.mode),
    steps: t.mode.steps.map(stepJson),
  })),
  modes: Object.fromEntries(
    Object.entries({ untuned, tuned }).map(([name, m]) => [
      name,
      { ...m, steps: m.steps.map(stepJson) },
    ]),
  ),
};
await writeFile(join(out, "result.json"), JSON.stringify(result, null, 2) + "\n");

await writeCharts(out, `${workload.name}, tuned vs untuned`, workload, rates, [
  ["untuned", untuned],
  ["tuned", tuned],
]);
console.error(
  `[autotune] ${bundlePath}: knee ${untuned.knee_rps.toFixed(1)} → ${tuned.knee_rps.toFixed(1)} req/s ` +
    `with ${JSON.stringify(outcome.best)}; ${join(out, "result.json")}`,
);
