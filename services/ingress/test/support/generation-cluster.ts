import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import { SidecarClient, type StatsResult } from "@shoal/sidecar-client";
import { compileCatalog } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import {
  SMOLLM2,
  sidecarBinary,
  smollm2CatalogDocument,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { run, type IngressOptions, type RunningIngress } from "../../src/run.js";

export { SMOLLM2 };

export interface GenerationCluster {
  readonly nats: NatsServerHandle;
  /** The cluster's first worker, whose sidecar `sidecarStats` reads. */
  readonly worker: ServiceHandle;
  readonly ingress: RunningIngress;
  readonly baseUrl: string;
  /** The first worker's sidecar counters, read over a second connection to its socket. */
  sidecarStats(): Promise<StatsResult>;
  /** Starts another worker serving the same models, with `env` on top of the cluster's. */
  startWorker(id: string, env?: Readonly<Record<string, string>>): Promise<ServiceHandle>;
  stop(): Promise<void>;
}

export interface GenerationClusterOptions {
  /** Environment for every worker process on top of the cluster's. */
  readonly env?: Readonly<Record<string, string>>;
  /** The catalog the whole cluster serves. @default SmolLM2 alone */
  readonly catalog?: { models: object[] };
  /** Ingress settings on top of the cluster's. */
  readonly ingress?: Partial<Pick<IngressOptions, "streamIdleTimeoutMs" | "access" | "logger">>;
}

/**
 * A real cluster serving SmolLM2 (or `catalog`): nats-server, the worker service as its own
 * process with its sidecar and the real weights, serving every model of the catalog, and
 * ingress (annotating in process) in this process.
 */
export async function startGenerationCluster(
  options: GenerationClusterOptions = {},
): Promise<GenerationCluster> {
  const document = options.catalog ?? smollm2CatalogDocument();
  const catalog = compileCatalog(document, { modelsDir: "/unused" });
  const dir = await tempDir("generation-cluster");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(catalogPath, JSON.stringify(document));
  const nats = await startNatsServer();
  const workers: ServiceHandle[] = [];
  const startWorker = async (
    id: string,
    env: Readonly<Record<string, string>> = {},
  ): Promise<ServiceHandle> => {
    const worker = await startService("worker", {
      env: {
        NATS_URL: nats.url,
        SHOAL_SIDECAR_BIN: sidecarBinary(),
        SHOAL_CATALOG: catalogPath,
        SHOAL_WORKER_MODELS: catalog.models.map((m) => m.id).join(","),
        SHOAL_WORKER_ID: id,
        SHOAL_SIDECAR_SOCKET: join(dir, `${id}.sock`),
        LOG_LEVEL: "info",
        ...options.env,
        ...env,
      },
      readyMessage: "worker pulling",
      readyTimeoutMs: 300_000,
    });
    workers.push(worker);
    return worker;
  };
  const worker = await startWorker("worker-1");
  const ingress = await run({
    natsServers: nats.url,
    catalog,
    port: 0,
    logger: createLogger({ service: "ingress", level: "warn" }),
    tracer: trace.getTracer("test"),
    ...options.ingress,
  });
  const stats = await SidecarClient.connect({ socketPath: join(dir, "worker-1.sock") });
  return {
    nats,
    worker,
    ingress,
    baseUrl: `http://127.0.0.1:${ingress.port}`,
    sidecarStats: () => stats.stats(),
    startWorker,
    async stop() {
      await stats.close();
      await ingress.stop();
      for (const w of workers) await w.stop();
      await nats.stop();
    },
  };
}
