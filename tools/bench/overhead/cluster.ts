/**
 * The cluster the overhead bench measures: every process of the quickstart's request path, as
 * `npm start` runs it (nats-server, ingress, one worker and its sidecar), with one
 * simulated model whose batches cost nothing, so all the CPU a request takes is Shoal's own.
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
} from "@shoal/testing";
import { childPid } from "./proc-cpu.js";

/** The one model the bench sends to: MiniLM's tokenizer and shape, simulated compute. */
export const OVERHEAD_MODEL = "sim/zero-cost";

export interface OverheadCluster {
  readonly baseUrl: string;
  /** Every cluster process by role, for the CPU accounting. */
  readonly pids: Readonly<Record<string, number>>;
  stop(): Promise<void>;
}

/**
 * @param serviceEnv extra environment for every Node service, e.g.
 *   `{ NODE_OPTIONS: "--cpu-prof --cpu-prof-dir=/tmp/prof" }` to see where their CPU goes.
 */
export async function startOverheadCluster(
  serviceEnv: Readonly<Record<string, string>> = {},
): Promise<OverheadCluster> {
  const dir = await tempDir("bench-overhead");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(
    catalogPath,
    JSON.stringify({
      models: [simEmbeddingEntry(OVERHEAD_MODEL, "zero-cost")],
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
    ...serviceEnv,
  };
  const port = await freePort();
  try {
    const worker = await startService("worker", {
      env: {
        ...common,
        SHOAL_SIDECAR_BIN: sidecarBinary(),
        SHOAL_SIDECAR_BACKEND: "sim",
        SHOAL_SIDECAR_SOCKET: join(dir, "sidecar.sock"),
        SHOAL_WORKER_MODELS: OVERHEAD_MODEL,
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
      },
      readyMessage: "ingress listening",
    });
    services.push(ingress);
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      pids: {
        ingress: ingress.pid,
        "nats-server": nats.pid,
        worker: worker.pid,
        sidecar: await childPid(worker.pid, "shoal-sidecar"),
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
