import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Kvm, type KV } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { Annotator } from "@shoal/annotation";
import { StreamPublisher } from "@shoal/jetstream";
import { compileCatalog, type Catalog } from "@shoal/config";
import { Gateway, StreamGateway } from "@shoal/gateway";
import type { EnsureModelOptions } from "@shoal/model-sources";
import { RESIDENCY_BUCKET, ResidencyView, type ResidencyPolicyOptions } from "@shoal/residency";
import { createLogger, createMetricsRegistry, serveMetrics } from "@shoal/telemetry";
import {
  freePort,
  minilmDir,
  sidecarBinary,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { run, type RunningModelLoader } from "../src/index.js";

export const MB = 1_000_000;
export const NODE = "node-a";

/**
 * A simulated model: MiniLM's tokenizer (so token counts are real), a simulated size, and a
 * cost small enough that twenty of them fit a test on two cores.
 */
export function simModel(key: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `sim/${key}`,
    key,
    family: "embedding",
    dimensions: 384,
    maxInputTokens: 256,
    memoryBytes: 100 * MB,
    source: { kind: "dir", path: minilmDir() },
    sim: { memoryBytes: 100 * MB, fixedUs: 2000, perPaddedTokenNs: 20_000 },
    ...over,
  };
}

/** nats-server, an in-process gateway and model-loader, and worker processes with sim sidecars. */
export interface SimNode {
  readonly nats: NatsServerHandle;
  readonly nc: NatsConnection;
  readonly catalog: Catalog;
  readonly gateway: Gateway;
  /** The same for generation. */
  readonly streams: StreamGateway;
  readonly loader: RunningModelLoader;
  /** The residency bucket, read the way ingress or an operator would. */
  readonly kv: KV;
  readonly workers: ServiceHandle[];
  /** Each worker's metrics port, in `workers` order. */
  readonly metricsPorts: readonly number[];
  /** The model-loader's metrics port. */
  readonly loaderMetricsPort: number;
  api(path: string): Promise<{ status: number; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

export interface SimNodeOptions {
  readonly models: readonly Record<string, unknown>[];
  readonly workers: number;
  /** Accelerator memory of each worker. */
  readonly capacityBytes: number;
  readonly policy?: ResidencyPolicyOptions;
  readonly failureCooldownMs?: number;
  readonly modelSources?: EnsureModelOptions;
  /** Sidecar backend of the workers. @default "sim" */
  readonly backend?: "sim" | "candle";
}

export async function startSimNode(options: SimNodeOptions): Promise<SimNode> {
  const dir = await tempDir("model-loader");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(catalogPath, JSON.stringify({ models: options.models }));
  const catalog = compileCatalog({ models: options.models }, { modelsDir: join(dir, "models") });
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  const logger = createLogger({ service: "test", level: "warn" });
  const loaderRegistry = createMetricsRegistry();
  const loaderMetrics = await serveMetrics({ registry: loaderRegistry, port: 0, logger });
  const loader = await run({
    metrics: loaderRegistry,
    natsServers: nats.url,
    catalog,
    node: NODE,
    policy: options.policy,
    tickMs: 200,
    heartbeatMs: 500,
    failureCooldownMs: options.failureCooldownMs ?? 600_000,
    modelSources: options.modelSources,
    port: 0,
    logger: createLogger({ service: "model-loader", level: "warn" }),
  });
  const annotator = new Annotator({
    catalog,
    publisher: new StreamPublisher(nc),
    logger,
    tracer: trace.getTracer("t"),
  });
  await annotator.preloadVocabularies();
  const residency = await ResidencyView.start(nc, logger);
  const gateway = await Gateway.start({
    nc,
    catalog,
    logger,
    defaultTimeoutMs: 60_000,
    annotator,
    residency,
  });
  const streams = await StreamGateway.start({
    nc,
    catalog,
    logger,
    defaultTimeoutMs: 60_000,
    annotator,
    residency,
  });
  const workers: ServiceHandle[] = [];
  const metricsPorts: number[] = [];
  for (let i = 1; i <= options.workers; i++) {
    metricsPorts.push(await freePort());
    workers.push(
      await startService("worker", {
        env: {
          NATS_URL: nats.url,
          SHOAL_CATALOG: catalogPath,
          SHOAL_SIDECAR_BIN: sidecarBinary(),
          SHOAL_SIDECAR_BACKEND: options.backend ?? "sim",
          SHOAL_WORKER_ID: `w${i}`,
          // Per run, so a sidecar left behind by a killed run cannot hold the socket.
          SHOAL_SIDECAR_SOCKET: join(dir, `sidecar-w${i}.sock`),
          SHOAL_NODE_ID: NODE,
          SHOAL_WORKER_MEMORY_BYTES: String(options.capacityBytes),
          SHOAL_HEARTBEAT_MS: "500",
          // The gateway and model-loader here compile the catalog without a bundle; the
          // workers must see the same settings (a bundle's modelThreads changes a footprint).
          SHOAL_BUNDLE: "none",
          SHOAL_METRICS_PORT: String(metricsPorts[i - 1]),
          LOG_LEVEL: "info",
        },
        readyMessage: "worker pulling",
      }),
    );
  }
  const kv = await new Kvm(nc).open(RESIDENCY_BUCKET);
  return {
    nats,
    nc,
    catalog,
    gateway,
    streams,
    loader,
    kv,
    workers,
    metricsPorts,
    loaderMetricsPort: loaderMetrics.port,
    async api(path) {
      const res = await fetch(`http://127.0.0.1:${loader.port}${path}`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async stop() {
      // The loader first: workers going away one by one would otherwise make it re-place models.
      await loader.stop();
      await loaderMetrics.close();
      for (const w of workers) await w.stop();
      await gateway.close();
      streams.close();
      residency.stop();
      await nc.close();
      await nats.stop();
    },
  };
}

/** Polls until `check` returns a value, or fails with `what` after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
