/**
 * The fleet scenario's cluster: many simulated accelerators on this machine. nats-server, the
 * ingress service, and one worker process per accelerator whose sidecar runs the simulated
 * backend (docs/simulated-backend.md) with the catalog's cost model; each worker serves one
 * model, with replicas in proportion to the models' popularity. In router mode the workers
 * pull only their routed subjects and a router service (libs/router) assigns every item;
 * `routeWith` replaces the router to try another policy or refresh interval on the same
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
import { sumCounters, type Harness } from "./harness.js";

/** One simulated model of the fleet and how many accelerators hold it. */
export interface FleetModel {
  readonly id: string;
  readonly key: string;
  readonly replicas: number;
}

export interface FleetCost {
  readonly fixedUs: number;
  readonly perPaddedTokenNs: number;
}

export interface FleetOptions {
  readonly models: readonly FleetModel[];
  readonly cost: FleetCost;
  /** `routed`: workers take only what a router assigns them. */
  readonly routed: boolean;
  /** Extra environment for every worker (serving parameters under test). */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /** `SHOAL_BUNDLE` for the workers and ingress: a bundle file, or `none` for the defaults. */
  readonly bundle?: string;
}

export interface FleetHarness extends Harness {
  /** Router mode only: (re)starts the router with this policy and refresh interval. */
  routeWith(policy: RoutingPolicy, refreshMs: number): Promise<void>;
}

export async function startSimFleet(options: FleetOptions): Promise<FleetHarness> {
  const dir = await tempDir("bench-fleet");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(
    catalogPath,
    JSON.stringify({
      models: options.models.map((m) =>
        simEmbeddingEntry(m.id, m.key, {
          fixedUs: options.cost.fixedUs,
          perPaddedTokenNs: options.cost.perPaddedTokenNs,
        }),
      ),
    }),
  );
  const nats = await startNatsServer();
  const services: ServiceHandle[] = [];
  const clients: SidecarClient[] = [];
  const workers = new Map<string, string[]>();
  let router: ServiceHandle | undefined;
  const stopAll = async (): Promise<void> => {
    await router?.stop();
    for (const c of clients) await c.close();
    for (const s of services.reverse()) await s.stop();
    await nats.stop();
  };
  const port = await freePort();
  const bundleEnv: Record<string, string> =
    options.bundle === undefined ? {} : { SHOAL_BUNDLE: options.bundle };
  try {
    const placements = options.models.flatMap((m) =>
      Array.from({ length: m.replicas }, (_, r) => ({ model: m, id: `${m.key}-r${r}` })),
    );
    // A few at a time: each start spawns a Node process and a sidecar.
    for (let i = 0; i < placements.length; i += 4) {
      const group = placements.slice(i, i + 4);
      const started = await Promise.all(
        group.map(({ model, id }) =>
          startService("worker", {
            env: {
              NATS_URL: nats.url,
              SHOAL_CATALOG: catalogPath,
              SHOAL_SIDECAR_BIN: sidecarBinary(),
              SHOAL_SIDECAR_BACKEND: "sim",
              SHOAL_SIDECAR_SOCKET: join(dir, `${id}.sock`),
              SHOAL_WORKER_ID: id,
              SHOAL_WORKER_MODELS: model.id,
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
      for (const { model, id } of group) {
        workers.set(id, [model.key]);
        clients.push(await SidecarClient.connect({ socketPath: join(dir, `${id}.sock`) }));
      }
    }
    services.push(
      await startService("ingress", {
        env: {
          NATS_URL: nats.url,
          SHOAL_CATALOG: catalogPath,
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
    async routeWith(policy, refreshMs) {
      if (!options.routed) throw new Error("routeWith: this fleet pulls; start it routed");
      await router?.stop();
      router = await startService("router", {
        env: {
          NATS_URL: nats.url,
          SHOAL_ROUTER_POLICY: policy,
          SHOAL_ROUTER_REFRESH_MS: String(refreshMs),
          SHOAL_ROUTER_WORKERS: [...workers].map(([w, keys]) => `${w}=${keys.join(",")}`).join(";"),
          LOG_LEVEL: "info",
        },
        readyMessage: "router routing",
      });
    },
    stop: stopAll,
  };
}
