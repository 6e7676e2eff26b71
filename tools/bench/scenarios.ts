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
import { apportion, zipfWeights, type Send, type Workload } from "@shoal/loadgen";
import { bundleFromEnv, catalogFromEnv } from "@shoal/process";
import { repoRoot } from "@shoal/testing";
import { publishWorkloadAdapters } from "./harness/adapters.js";
import type { Harness } from "./harness/harness.js";
import { startRealCluster } from "./harness/real-cluster.js";
import { startSimFleet, type FleetHarness, type FleetModel } from "./harness/sim-fleet.js";

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

/** The fleet workload's models, in popularity order. */
export function fleetModels(workload: Workload): readonly string[] {
  const entry = workload.mix[0];
  if (entry === undefined || workload.mix.length !== 1 || entry.function !== "embed") {
    throw new Error("the fleet scenario takes a workload of one embed mix entry");
  }
  return entry.models;
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
 * The fleet's models with their replicas over `accelerators`: the bundle's `replicas` when the
 * bundle gives every model one (the tuned placement; scaled in proportion when they do not sum
 * to `accelerators`), else in proportion to their Zipf popularity.
 */
export function fleetPlacement(
  workload: Workload,
  accelerators: number,
  bundle?: ConfigBundle,
): FleetModel[] {
  const ids = fleetModels(workload);
  const tuned = ids.map((id) => bundle?.models.get(id)?.replicas);
  const replicas = tuned.every((r) => r !== undefined)
    ? apportion(tuned, accelerators)
    : skewedReplicas(workload, accelerators, 1);
  return ids.map((id, i) => ({
    id,
    key: id.replace(/^sim\//, ""),
    replicas: replicas[i] as number,
  }));
}

export interface ScenarioOptions {
  /** `SHOAL_BUNDLE` for the services: a bundle file, or `none`. */
  readonly bundle?: string | undefined;
  /** MiniLM: the worker's device (`cpu`, `cuda:0`). @default "cpu" */
  readonly device?: string | undefined;
  /** MiniLM: ingress processes. @default 1 */
  readonly ingresses?: number | undefined;
  /** Fleet: accelerators to place the models on. */
  readonly accelerators?: number;
  /** Fleet: workers take only what a router assigns them. */
  readonly routed?: boolean;
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
    models: fleetPlacement(workload, options.accelerators ?? FLEET_ACCELERATORS, loaded?.bundle),
    cost: FLEET_COST,
    routed: options.routed ?? false,
    ...bundle,
  });
}

/** One request per model, so no step pays for a cold tokenizer or a first batch. */
export async function warm(send: Send, workload: Workload): Promise<void> {
  for (const entry of workload.mix) {
    for (const model of entry.models) {
      await send(
        { atMs: 0, function: entry.function, model, inputTokens: [8], maxTokens: 1, stream: false },
        AbortSignal.timeout(300_000),
      );
    }
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
