/**
 * The fleet scenario's cluster: many simulated accelerators on this machine. nats-server, the
 * ingress service, and one worker process per accelerator whose sidecar runs the simulated
 * backend (docs/simulated-backend.md) with the models the placement gives it. An accelerator's
 * speed divides the cost model of its models (its own catalog file), and the worker's prior of
 * that cost with it, as a deployment calibrates each kind of accelerator. In router mode the
 * workers pull only their routed subjects and a router service (libs/router) assigns every
 * item; `routeWith` replaces the router to try another policy or refresh interval on the same
 * workers.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RoutingPolicy } from "@shoal/router";
import { SidecarClient } from "@shoal/sidecar-client";
import {
  freePort,
  sidecarBinary,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type ServiceHandle,
} from "@shoal/testing";
import type { PlacedAccelerator } from "../fleet-placement.js";
import { sumCounters, type Harness } from "./harness.js";
import { metricSum } from "./metric-sum.js";

export interface FleetCost {
  readonly fixedUs: number;
  readonly perPaddedTokenNs: number;
}

/** A model's serving settings as a catalog entry's `serving` holds them. */
export type FleetServing = Readonly<Record<string, unknown>> & {
  readonly batchCostPrior?: {
    readonly fixedUs: number;
    readonly perSequenceUs: number;
    readonly perPaddedTokenUs: number;
  };
};

export interface FleetOptions {
  /** Every model of the workload (catalog ids `sim/<key>`). */
  readonly models: readonly string[];
  readonly accelerators: readonly PlacedAccelerator[];
  /** Batch cost on a speed-1 accelerator. */
  readonly cost: FleetCost;
  readonly modelMemoryBytes: number;
  /** Every model's serving settings (a bundle's tuned ones), or none for the defaults. */
  readonly serving?: FleetServing;
  /** `routed`: workers take only what a router assigns them. */
  readonly routed: boolean;
  /** Extra environment for every worker (serving parameters under test). */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /**
   * Dynamic residency: models are loaded (taking `loadMs`) and unloaded as demand moves, by the
   * model-loader in pull mode and by the router's replica autoscaler in router mode, within
   * each accelerator's memory. Without, each accelerator holds its placed models throughout.
   */
  readonly dynamic?: {
    readonly loadMs: number;
    readonly autoscale: RouterAutoscale;
    /** The model-loader's `SHOAL_REPLICATE_ABOVE_PENDING`: queued items per copy. */
    readonly replicateAbovePending: number;
  };
}

/** The router's replica autoscaler settings (services/router). */
export interface RouterAutoscale {
  readonly targetLag: number;
  readonly scaleDownWindowMs: number;
  readonly syncMs: number;
  readonly minReplicas: number;
  /** Over how long the arrival rates that `fill` shares memory by are measured, ms. */
  readonly demandWindowMs: number;
}

/** Loads and unloads since the fleet started, by whichever service manages residency. */
export interface ResidencyChanges {
  readonly loads: number;
  readonly unloads: number;
}

export interface FleetHarness extends Harness {
  /**
   * Router mode only: (re)starts the router with this policy and refresh interval; with
   * dynamic residency, `fill` has its autoscaler share free memory by arrival rate too.
   */
  routeWith(policy: RoutingPolicy, refreshMs: number, fill?: boolean): Promise<void>;
}

/** The node every simulated accelerator of a dynamic fleet belongs to. */
const NODE = "fleet";

/** A simulated model's subject key: its id without the `sim/` prefix. */
export function modelKey(id: string): string {
  return id.replace(/^sim\//, "");
}

/** The catalog of the fleet's models as an accelerator of `speed` runs them. */
function catalogAt(o: FleetOptions, speed: number): object {
  const prior = o.serving?.batchCostPrior;
  const serving =
    o.serving === undefined
      ? undefined
      : {
          ...o.serving,
          ...(prior === undefined
            ? {}
            : {
                batchCostPrior: {
                  fixedUs: prior.fixedUs / speed,
                  perSequenceUs: prior.perSequenceUs / speed,
                  perPaddedTokenUs: prior.perPaddedTokenUs / speed,
                },
              }),
        };
  return {
    models: o.models.map((id) => ({
      ...simEmbeddingEntry(id, modelKey(id), {
        fixedUs: o.cost.fixedUs / speed,
        perPaddedTokenNs: o.cost.perPaddedTokenNs / speed,
        memoryBytes: o.modelMemoryBytes,
        ...(o.dynamic === undefined ? {} : { loadMs: o.dynamic.loadMs }),
      }),
      // What placement plans with before a sidecar reports the real size.
      memoryBytes: o.modelMemoryBytes,
      ...(serving === undefined ? {} : { serving }),
    })),
  };
}

export async function startSimFleet(options: FleetOptions): Promise<FleetHarness> {
  const dir = await tempDir("bench-fleet");
  const catalogs = new Map<number, string>();
  for (const speed of new Set([1, ...options.accelerators.map((a) => a.speed)])) {
    const path = join(dir, `catalog-${speed}.json`);
    await writeFile(path, JSON.stringify(catalogAt(options, speed)));
    catalogs.set(speed, path);
  }
  const nats = await startNatsServer();
  const services: ServiceHandle[] = [];
  const clients: SidecarClient[] = [];
  const workers = new Map<string, string[]>();
  let router: ServiceHandle | undefined;
  let routerMetricsPort = 0;
  let loaderMetricsPort = 0;
  let loader: ServiceHandle | undefined;
  const stopAll = async (): Promise<void> => {
    await router?.stop();
    // The loader before its workers: workers going away one by one would make it re-place.
    await loader?.stop();
    for (const c of clients) await c.close();
    for (const s of services.reverse()) await s.stop();
    await nats.stop();
  };
  const port = await freePort();
  // The serving settings travel in the catalogs, scaled to each accelerator.
  const bundleEnv = { SHOAL_BUNDLE: "none" };
  try {
    // A few at a time: each start spawns a Node process and a sidecar.
    for (let i = 0; i < options.accelerators.length; i += 4) {
      const group = options.accelerators.slice(i, i + 4);
      const started = await Promise.all(
        group.map(({ id, speed, memoryBytes, models }) =>
          startService("worker", {
            env: {
              NATS_URL: nats.url,
              SHOAL_CATALOG: catalogs.get(speed) as string,
              SHOAL_SIDECAR_BIN: sidecarBinary(),
              SHOAL_SIDECAR_BACKEND: "sim",
              // The models an accelerator holds take turns on it.
              SHOAL_SIDECAR_SIM_DEVICE: "shared",
              SHOAL_SIDECAR_SOCKET: join(dir, `${id}.sock`),
              SHOAL_WORKER_ID: id,
              ...(options.dynamic === undefined
                ? { SHOAL_WORKER_MODELS: models.join(",") }
                : { SHOAL_NODE_ID: NODE, SHOAL_WORKER_MEMORY_BYTES: String(memoryBytes) }),
              // One batch at a time on the accelerator, whichever model it is for.
              SHOAL_WORKER_DEVICE_BATCHES: "1",
              SHOAL_WORK_SOURCE: options.routed ? "routed" : "shared",
              LOG_LEVEL: "info",
              ...bundleEnv,
              ...options.workerEnv,
            },
            readyMessage: "worker pulling",
          }),
        ),
      );
      services.push(...started);
      for (const { id, models } of group) {
        workers.set(id, models.map(modelKey));
        clients.push(await SidecarClient.connect({ socketPath: join(dir, `${id}.sock`) }));
      }
    }
    if (options.dynamic !== undefined && !options.routed) {
      loaderMetricsPort = await freePort();
      loader = await startService("model-loader", {
        env: {
          NATS_URL: nats.url,
          SHOAL_CATALOG: catalogs.get(1) as string,
          SHOAL_NODE_ID: NODE,
          SHOAL_REPLICATE_ABOVE_PENDING: String(options.dynamic.replicateAbovePending),
          SHOAL_SPARE_COPIES: "1",
          // The same window the router's autoscaler holds a scale-down for.
          SHOAL_SPARE_WINDOW_MS: String(options.dynamic.autoscale.scaleDownWindowMs),
          SHOAL_LOADER_PORT: String(await freePort()),
          SHOAL_METRICS_PORT: String(loaderMetricsPort),
          LOG_LEVEL: "info",
          ...bundleEnv,
        },
        readyMessage: "model-loader placing",
      });
    }
    services.push(
      await startService("ingress", {
        env: {
          NATS_URL: nats.url,
          SHOAL_CATALOG: catalogs.get(1) as string,
          SHOAL_PORT: String(port),
          SHOAL_HOST: "127.0.0.1",
          SHOAL_MAX_PENDING: "100000",
          LOG_LEVEL: "info",
          ...bundleEnv,
        },
        readyMessage: "ingress listening",
      }),
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
  return {
    baseUrls: [`http://127.0.0.1:${port}`],
    natsUrl: nats.url,
    accelerators: clients.length,
    counters: () => sumCounters(clients),
    async routeWith(policy, refreshMs, fill = false) {
      if (!options.routed) throw new Error("routeWith: this fleet pulls; start it routed");
      await router?.stop();
      const scale = options.dynamic?.autoscale;
      routerMetricsPort = await freePort();
      router = await startService("router", {
        env: {
          NATS_URL: nats.url,
          SHOAL_ROUTER_POLICY: policy,
          SHOAL_ROUTER_REFRESH_MS: String(refreshMs),
          SHOAL_METRICS_PORT: String(routerMetricsPort),
          LOG_LEVEL: "info",
          ...(scale === undefined
            ? {
                SHOAL_ROUTER_WORKERS: [...workers]
                  .map(([w, keys]) => `${w}=${keys.join(",")}`)
                  .join(";"),
              }
            : {
                SHOAL_CATALOG: catalogs.get(1) as string,
                SHOAL_BUNDLE: "none",
                SHOAL_ROUTER_AUTOSCALE_NODE: NODE,
                SHOAL_ROUTER_TARGET_LAG: String(scale.targetLag),
                SHOAL_ROUTER_SCALE_DOWN_WINDOW_MS: String(scale.scaleDownWindowMs),
                SHOAL_ROUTER_SYNC_MS: String(scale.syncMs),
                SHOAL_ROUTER_MIN_REPLICAS: String(scale.minReplicas),
                SHOAL_ROUTER_DEMAND_WINDOW_MS: String(scale.demandWindowMs),
                SHOAL_ROUTER_FILL_MEMORY: fill ? "1" : "0",
              }),
        },
        readyMessage: "router routing",
      });
    },
    ...(options.dynamic === undefined
      ? {}
      : {
          async residencyChanges(): Promise<ResidencyChanges> {
            if (options.routed) {
              // Each router counts from its own start; the bench reads differences per step.
              return {
                loads: await metricSum(
                  routerMetricsPort,
                  "shoal_router_replica_changes_total",
                  'change="load"',
                ),
                unloads: await metricSum(
                  routerMetricsPort,
                  "shoal_router_replica_changes_total",
                  'change="unload"',
                ),
              };
            }
            return {
              loads: await metricSum(loaderMetricsPort, "shoal_loader_loads_total", 'outcome="ok"'),
              unloads: await metricSum(loaderMetricsPort, "shoal_loader_unloads_total"),
            };
          },
        }),
    stop: stopAll,
  };
}
