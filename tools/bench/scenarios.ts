/**
 * The bench's scenarios as clusters to run: what `bench.ts` sweeps and `autotune.ts` tunes.
 *
 * - `minilm`: the real cluster on this machine (ingress, one worker, Candle MiniLM on the CPU,
 *   or on a GPU with `device`).
 * - `fleet`: 8 simulated models on 32 simulated accelerators (replicas by popularity), many
 *   small embedding requests.
 * - `smollm2`: the real cluster generating with SmolLM2-135M-Instruct (Q4_1) on this CPU; the
 *   LoRA adapters its workload names (`base:adapter`) are published to the registry first.
 */
import { join } from "node:path";
import type { ConfigBundle } from "@shoal/config";
import {
  apportion,
  weightsIn,
  zipfWeights,
  type AcceleratorClass,
  type Send,
  type Workload,
} from "@shoal/loadgen";
import { bundleFromEnv, catalogFromEnv } from "@shoal/process";
import { repoRoot } from "@shoal/testing";
import { publishWorkloadAdapters } from "./harness/adapters.js";
import type { Harness } from "./harness/harness.js";
import { startRealCluster } from "./harness/real-cluster.js";
import {
  startSimFleet,
  type FleetHarness,
  type FleetOptions,
  type FleetServing,
  type RouterAutoscale,
} from "./harness/sim-fleet.js";
import { placeFleet, type PlacedAccelerator } from "./fleet-placement.js";

export const SCENARIOS = ["minilm", "fleet", "smollm2"] as const;
export type Scenario = (typeof SCENARIOS)[number];

export const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
export const SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct";

/**
 * Simulated accelerators slow enough that the fleet's knee falls below the load this machine's
 * two cores can offer and serve (about 1,000 single-input requests/s through ingress, NATS and
 * 32 workers), with a fixed cost per batch large against the per-token cost, as on a GPU, so
 * that batch size matters: 200 ms per batch plus 0.5 ms per padded token, i.e. a batch of one
 * 40-token input costs 220 ms and a batch of 30 costs 800 ms. (The first fleet runs used
 * 100 ms + 0.1 ms, whose knee lay above what this machine can offer.)
 */
export const FLEET_COST = { fixedUs: 200_000, perPaddedTokenNs: 500_000 } as const;

/** Simulated accelerators the fleet scenario places its models on, unless told otherwise. */
export const FLEET_ACCELERATORS = 32;

/**
 * The config bundle each scenario runs with unless told otherwise: the CPU one the services
 * pick for themselves, and the fleet's for its simulated accelerators.
 */
export function defaultBundle(scenario: Scenario): string | undefined {
  return scenario === "fleet" ? join(repoRoot(), "bundles", "sim-fleet.json") : undefined;
}

export function workloadPath(scenario: Scenario): string {
  return join(repoRoot(), "tools", "bench", "workloads", `${scenario}.json`);
}

/**
 * The fleet scenarios `--suite` runs, one workload file each: today's easy case, then each
 * condition that hurts a router on its own, then all of them together.
 */
export const FLEET_SUITE = [
  "fleet",
  "fleet-drift",
  "fleet-bursty",
  "fleet-heterogeneous",
  "fleet-shared",
  "fleet-realistic",
] as const;

export function fleetWorkloadPath(name: (typeof FLEET_SUITE)[number]): string {
  return join(repoRoot(), "tools", "bench", "workloads", `${name}.json`);
}

/** Memory a simulated model takes unless the workload says: the sim's default. */
const FLEET_MODEL_MEMORY_BYTES = 100_000_000;

/** Memory of a simulated accelerator unless the workload says. */
const FLEET_ACCELERATOR_MEMORY_BYTES = 80e9;

/** The fleet workload's models: every mix entry's, in order (each entry in popularity order). */
export function fleetModels(workload: Workload): readonly string[] {
  if (workload.mix.some((e) => e.function !== "embed")) {
    throw new Error(
      "the fleet scenario simulates embedding models only: every mix entry must embed",
    );
  }
  return workload.mix.flatMap((e) => e.models);
}

/** Each of {@link fleetModels}' share of the requests at the start of the run. */
function fleetWeights(workload: Workload): number[] {
  const shares = workload.mix.reduce((n, e) => n + e.share, 0);
  return workload.mix.flatMap((e) => {
    const w = weightsIn(e.popularity, 0);
    const total = w.reduce((a, b) => a + b, 0);
    return w.map((x) => (x / total) * (e.share / shares));
  });
}

/**
 * Replicas of the fleet's models over `accelerators`, in proportion to their Zipf popularity
 * raised to `skew`: 1 is proportional to load, below 1 spreads the accelerators more evenly,
 * above 1 gives the popular models more.
 */
export function skewedReplicas(workload: Workload, accelerators: number, skew: number): number[] {
  const weights = zipfWeights(fleetModels(workload).length, 1).map((w) => w ** skew);
  return apportion(weights, accelerators);
}

/**
 * What a fleet run starts: its models, placed on its accelerators (none placed with dynamic
 * residency: they load as demand comes), and their costs.
 */
export type FleetSetup = Omit<FleetOptions, "routed" | "workerEnv">;

/** How long a model load takes with dynamic residency unless the workload says. */
const FLEET_MODEL_LOAD_MS = 2000;

/**
 * The router baseline's replica autoscaler, set generously: it reads the queues every second
 * (KEDA's default polling interval is 30 s, HPA's sync period 15 s) and holds a scale-down for
 * 10 s (HPA's default window is 300 s), so replica sets follow demand much faster than a
 * default Kubernetes setup would. The target of 8 queued items per replica is about one
 * batch's worth at the fleet's knee; `--target-lag` tries others. Arrival rates, for the
 * variant that shares free memory by demand, are measured over the last 10 s.
 */
/**
 * Queued items per copy above which the pull fleet's model-loader adds a copy: about one
 * batch's worth at the fleet's knee, as for the router's autoscaler (the loader's default, 64,
 * suits accelerators that take hundreds of items a batch).
 */
const FLEET_REPLICATE_ABOVE_PENDING = 8;

export const FLEET_AUTOSCALE: RouterAutoscale = {
  targetLag: 8,
  scaleDownWindowMs: 10_000,
  syncMs: 1000,
  minReplicas: 1,
  demandWindowMs: 10_000,
};

/**
 * The workload's fleet (its `fleet` section, or 32 identical accelerators of one model each)
 * with the models placed on it. With one model per accelerator on identical ones, a bundle
 * that gives every model `replicas` fixes the copies (the tuned placement, scaled when they do
 * not sum to the accelerators); otherwise copies follow popularity. The bundle's serving
 * settings apply to every model, with the cost prior of the workload's batch cost.
 */
export function fleetSetup(
  workload: Workload,
  accelerators: number | undefined,
  bundle?: ConfigBundle,
  autoscale: RouterAutoscale = FLEET_AUTOSCALE,
): FleetSetup {
  const spec = workload.fleet;
  if (accelerators !== undefined && spec?.accelerators !== undefined) {
    throw new Error(`--accelerators: workload ${workload.name} lists its own accelerators`);
  }
  const classes = spec?.accelerators ?? [
    {
      count: accelerators ?? FLEET_ACCELERATORS,
      speed: 1,
      memoryBytes: FLEET_ACCELERATOR_MEMORY_BYTES,
    },
  ];
  const models = fleetModels(workload);
  const perAccelerator = spec?.modelsPerAccelerator ?? 1;
  const tuned = models.map((id) => bundle?.models.get(id)?.replicas);
  const fixedReplicas =
    perAccelerator === 1 && classes.length === 1 && tuned.every((r) => r !== undefined)
      ? tuned
      : undefined;
  const cost = spec?.batchCost ?? FLEET_COST;
  const modelMemoryBytes = spec?.modelMemoryBytes ?? FLEET_MODEL_MEMORY_BYTES;
  const dynamic = spec?.residency === "dynamic";
  const placed = dynamic
    ? emptyFleet(classes, modelMemoryBytes)
    : placeFleet({
        models,
        weights: fleetWeights(workload),
        accelerators: classes,
        perAccelerator,
        modelMemoryBytes,
        ...(fixedReplicas === undefined ? {} : { replicas: fixedReplicas }),
      });
  const first = bundle === undefined ? undefined : [...bundle.models.values()][0];
  let serving: FleetServing | undefined;
  if (first !== undefined) {
    // Copies are the placement's business, not a serving setting.
    const rest = Object.fromEntries(
      Object.entries(first).filter(([key]) => key !== "replicas"),
    ) as Omit<typeof first, "replicas">;
    serving = {
      ...rest,
      ...(rest.batchCostPrior === undefined
        ? {}
        : {
            batchCostPrior: {
              fixedUs: cost.fixedUs,
              perSequenceUs: 0,
              perPaddedTokenUs: cost.perPaddedTokenNs / 1000,
            },
          }),
    };
  }
  return {
    models,
    accelerators: placed,
    ...(dynamic
      ? {
          dynamic: {
            loadMs: spec.modelLoadMs ?? FLEET_MODEL_LOAD_MS,
            autoscale,
            replicateAbovePending: FLEET_REPLICATE_ABOVE_PENDING,
          },
        }
      : {}),
    cost,
    modelMemoryBytes,
    ...(serving === undefined ? {} : { serving }),
  };
}

/** Accelerators with nothing placed on them, for dynamic residency; each must fit a model. */
function emptyFleet(
  classes: readonly AcceleratorClass[],
  modelMemoryBytes: number,
): PlacedAccelerator[] {
  const all = classes.flatMap((c) => Array.from({ length: c.count }, () => c));
  if (all.some((a) => a.memoryBytes < modelMemoryBytes)) {
    throw new RangeError(`a model of ${modelMemoryBytes} bytes does not fit every accelerator`);
  }
  return all.map((a, i) => ({
    id: `a${i}`,
    speed: a.speed,
    memoryBytes: a.memoryBytes,
    models: [],
  }));
}

export interface ScenarioOptions {
  /** `SHOAL_BUNDLE` for the services: a bundle file, or `none`. */
  readonly bundle?: string | undefined;
  /** MiniLM: the worker's device (`cpu`, `cuda:0`). @default "cpu" */
  readonly device?: string | undefined;
  /** MiniLM: ingress processes. @default 1 */
  readonly ingresses?: number | undefined;
  /** Fleet: accelerators to place the models on, when the workload does not list them. */
  readonly accelerators?: number | undefined;
  /** Fleet: workers take only what a router assigns them. */
  readonly routed?: boolean;
  /** Fleet with dynamic residency: the router's replica autoscaler. */
  readonly autoscale?: RouterAutoscale;
}

export function startScenario(
  scenario: "fleet",
  workload: Workload,
  options: ScenarioOptions,
): Promise<FleetHarness>;
export function startScenario(
  scenario: Scenario,
  workload: Workload,
  options: ScenarioOptions,
): Promise<Harness>;
export async function startScenario(
  scenario: Scenario,
  workload: Workload,
  options: ScenarioOptions,
): Promise<Harness> {
  const bundle = options.bundle === undefined ? {} : { bundle: options.bundle };
  if (scenario === "minilm") {
    return startRealCluster({
      models: [MINILM],
      ...bundle,
      ...(options.device === undefined ? {} : { device: options.device }),
      ...(options.ingresses === undefined ? {} : { ingresses: options.ingresses }),
    });
  }
  if (scenario === "smollm2") {
    const harness = await startRealCluster({ models: [SMOLLM2], ...bundle });
    try {
      await publishWorkloadAdapters(harness.natsUrl, await catalogFromEnv(process.env), workload);
    } catch (err) {
      await harness.stop();
      throw err;
    }
    return harness;
  }
  const loaded =
    options.bundle === undefined
      ? undefined
      : await bundleFromEnv({ SHOAL_BUNDLE: options.bundle });
  return startSimFleet({
    ...fleetSetup(workload, options.accelerators, loaded?.bundle, options.autoscale),
    routed: options.routed ?? false,
  });
}

/**
 * One request per model, a few models at a time, so no step pays for a cold tokenizer, a first
 * batch or (with dynamic residency) a first load.
 */
export async function warm(send: Send, workload: Workload): Promise<void> {
  const requests = workload.mix.flatMap((entry) =>
    entry.models.map((model) => ({
      atMs: 0,
      function: entry.function,
      model,
      inputTokens: [8],
      maxTokens: 1,
      stream: false,
    })),
  );
  for (let i = 0; i < requests.length; i += 16) {
    await Promise.all(requests.slice(i, i + 16).map((r) => send(r, AbortSignal.timeout(300_000))));
  }
}

/**
 * Stops `running()` on Ctrl-C or a kill before exiting: a cluster's services are child
 * processes that outlive an interrupted bench otherwise.
 */
export function stopOnSignal(running: () => { stop(): Promise<void> } | undefined): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      console.error(`[bench] ${signal}: stopping the cluster`);
      // The step in progress now fails against the cluster being torn down; that is expected
      // and not worth a stack trace.
      process.on("uncaughtException", () => undefined);
      process.on("unhandledRejection", () => undefined);
      void (running()?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }
}
