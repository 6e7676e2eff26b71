import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  repoRoot,
  sidecarBinary,
  simEmbeddingEntry,
  startJaeger,
  startNatsServer,
  startService,
  tempDir,
  type JaegerHandle,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";

export const GB = 1_000_000_000;

/** A simulated embedding model: `bytes` on its accelerator, loads taking `loadMs`. */
export function simModel(
  id: string,
  key: string,
  options: { pinned: boolean; bytes: number; loadMs?: number },
): Record<string, unknown> {
  const base = simEmbeddingEntry(id, key, { fixedUs: 2_000 }) as Record<string, unknown>;
  return {
    ...base,
    pinned: options.pinned,
    memoryBytes: options.bytes,
    sim: {
      ...(base["sim"] as Record<string, unknown>),
      memoryBytes: options.bytes,
      loadMs: options.loadMs ?? 0,
    },
  };
}

export interface FleetCluster {
  readonly nats: NatsServerHandle;
  /** The trace backend every process exports every trace to. */
  readonly jaeger: JaegerHandle;
  readonly loader: ServiceHandle;
  readonly workers: readonly ServiceHandle[];
  readonly ingressUrl: string;
  readonly loaderUrl: string;
  readonly consoleUrl: string;
  stop(): Promise<void>;
}

/**
 * The cluster `npm start` runs, as separate processes, on one node whose accelerators are
 * simulated: nats-server, a model-loader placing the catalog's models, `workers` workers each
 * with a simulated sidecar of `capacityBytes`, ingress, the trace backend, and the console
 * reading them all.
 */
export async function startFleetCluster(options: {
  readonly models: readonly Record<string, unknown>[];
  readonly workers: number;
  readonly capacityBytes: number;
}): Promise<FleetCluster> {
  const dir = await tempDir("console-fleet");
  const catalog = join(dir, "catalog.json");
  await writeFile(catalog, JSON.stringify({ models: options.models }));
  const nats = await startNatsServer();
  const jaeger = await startJaeger();
  const started: ServiceHandle[] = [];
  // Heartbeats every 2 s: a worker paused for a few seconds stays placed (the loader forgets
  // a worker after three silent intervals).
  const common = {
    NATS_URL: nats.url,
    SHOAL_CATALOG: catalog,
    SHOAL_NODE_ID: "n1",
    SHOAL_HEARTBEAT_MS: "2000",
    LOG_LEVEL: "info",
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    OTEL_TRACES_SAMPLER: "always_on",
  };
  try {
    const loaderPort = await freePort();
    const loader = await startService("model-loader", {
      env: { ...common, SHOAL_LOADER_PORT: String(loaderPort), SHOAL_LOADER_TICK_MS: "250" },
      readyMessage: "model-loader placing",
    });
    started.push(loader);
    const workers: ServiceHandle[] = [];
    for (let i = 1; i <= options.workers; i++) {
      const worker = await startService("worker", {
        env: {
          ...common,
          SHOAL_WORKER_ID: `gpu${i}`,
          SHOAL_WORKER_MEMORY_BYTES: String(options.capacityBytes),
          SHOAL_SIDECAR_BIN: sidecarBinary(),
          SHOAL_SIDECAR_BACKEND: "sim",
          SHOAL_SIDECAR_SOCKET: join(dir, `gpu${i}.sock`),
        },
        readyMessage: "worker pulling",
      });
      workers.push(worker);
      started.push(worker);
    }
    const ingressPort = await freePort();
    const ingressMetricsPort = await freePort();
    started.push(
      await startService("ingress", {
        env: {
          ...common,
          SHOAL_PORT: String(ingressPort),
          SHOAL_METRICS_PORT: String(ingressMetricsPort),
        },
        readyMessage: "ingress listening",
      }),
    );
    const consolePort = await freePort();
    started.push(
      await startService("console", {
        env: {
          ...common,
          SHOAL_CONSOLE_PORT: String(consolePort),
          SHOAL_CONSOLE_INGRESS_METRICS: `http://127.0.0.1:${ingressMetricsPort}/metrics`,
          SHOAL_CONSOLE_BENCH_DIRS: join(repoRoot(), "docs", "bench"),
          SHOAL_CONSOLE_TRACES_URL: jaeger.queryUrl,
          SHOAL_CONSOLE_LOADERS: `http://127.0.0.1:${loaderPort}`,
        },
        readyMessage: "console listening",
      }),
    );
    return {
      nats,
      jaeger,
      loader,
      workers,
      ingressUrl: `http://127.0.0.1:${ingressPort}`,
      loaderUrl: `http://127.0.0.1:${loaderPort}`,
      consoleUrl: `http://127.0.0.1:${consolePort}`,
      async stop() {
        for (const s of started.reverse()) await s.stop();
        await nats.stop();
        await jaeger.stop();
      },
    };
  } catch (err) {
    for (const s of started.reverse()) await s.stop();
    await nats.stop();
    await jaeger.stop();
    throw err;
  }
}
