/**
 * The cluster the overhead and fairness benches measure: every process of the quickstart's
 * request path, as `npm start` runs it (nats-server, ingress, one worker and its sidecar),
 * with one simulated model whose batches cost nothing (so all the CPU a request takes is
 * Shoal's own) or the wall time `cost` says.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  sidecarBinary,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type ServiceHandle,
  type SimCost,
} from "@shoal/testing";
import { childPid, childPids } from "./proc-cpu.js";

/** The one model the bench sends to: MiniLM's tokenizer and shape, simulated compute. */
export const OVERHEAD_MODEL = "sim/zero-cost";

export interface OverheadCluster {
  readonly baseUrl: string;
  readonly natsUrl: string;
  /** The metrics ports of ingress and the worker, when they serve them. */
  readonly metricsPorts: readonly number[];
  /** Every cluster process by role (ingress: its supervisor and replicas), for CPU accounting. */
  readonly pids: Readonly<Record<string, readonly number[]>>;
  stop(): Promise<void>;
}

export interface OverheadClusterOptions {
  /**
   * `SHOAL_INGRESS_PROCESSES`: more than one runs ingress as replicas sharing the port under a
   * supervisor. @default 1
   */
  readonly ingressProcesses?: number;
  /** Extra environment for every Node service. */
  readonly serviceEnv?: Readonly<Record<string, string>>;
  /** Serve ingress's and the worker's metrics, each on a port of its own. @default false */
  readonly metrics?: boolean;
  /** What a batch of the model costs in wall time. @default nothing */
  readonly cost?: SimCost;
}

export async function startOverheadCluster(
  options: OverheadClusterOptions = {},
): Promise<OverheadCluster> {
  const ingressProcesses = options.ingressProcesses ?? 1;
  const dir = await tempDir("bench-overhead");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(
    catalogPath,
    JSON.stringify({
      models: [simEmbeddingEntry(OVERHEAD_MODEL, "zero-cost", options.cost)],
    }),
  );
  const nats = await startNatsServer();
  const services: ServiceHandle[] = [];
  const stop = async (): Promise<void> => {
    for (const s of services.reverse()) await s.stop();
    await nats.stop();
  };
  const common = {
    NATS_URL: nats.url,
    SHOAL_CATALOG: catalogPath,
    LOG_LEVEL: "info",
    ...options.serviceEnv,
  };
  const port = await freePort();
  const metricsPorts = options.metrics === true ? [await freePort(), await freePort()] : [];
  const metricsEnv = (i: number): Record<string, string> =>
    metricsPorts[i] === undefined ? {} : { SHOAL_METRICS_PORT: String(metricsPorts[i]) };
  try {
    const worker = await startService("worker", {
      env: {
        ...common,
        SHOAL_SIDECAR_BIN: sidecarBinary(),
        SHOAL_SIDECAR_BACKEND: "sim",
        SHOAL_SIDECAR_SOCKET: join(dir, "sidecar.sock"),
        SHOAL_WORKER_MODELS: OVERHEAD_MODEL,
        ...metricsEnv(1),
      },
      readyMessage: "worker pulling",
    });
    services.push(worker);
    const ingress = await startService("ingress", {
      env: {
        ...common,
        SHOAL_PORT: String(port),
        SHOAL_HOST: "127.0.0.1",
        SHOAL_MAX_PENDING: "100000",
        SHOAL_INGRESS_PROCESSES: String(ingressProcesses),
        ...metricsEnv(0),
      },
      readyMessage: "ingress listening",
    });
    services.push(ingress);
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      natsUrl: nats.url,
      metricsPorts,
      pids: {
        ingress: [ingress.pid, ...(await replicasOf(ingress.pid, ingressProcesses))],
        "nats-server": [nats.pid],
        worker: [worker.pid],
        sidecar: [await childPid(worker.pid, "shoal-sidecar")],
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The replicas of a supervisor started with `count` of them; none when it serves alone. */
async function replicasOf(supervisor: number, count: number): Promise<number[]> {
  if (count <= 1) return [];
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    // Node children only: tsx may run an esbuild service beside the replicas.
    const replicas = await childPids(supervisor, "node");
    if (replicas.length >= count) return replicas;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`ingress ${supervisor} did not start ${count} replicas within 60 s`);
}
