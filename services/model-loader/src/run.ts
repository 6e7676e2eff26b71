import { trace, type Tracer } from "@opentelemetry/api";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Catalog } from "@shoal/config";
import {
  connectNats,
  drainOrClose,
  ensureModelConsumer,
  ensureWorkStream,
  modelConsumerName,
  type WorkStreamOptions,
  type NatsAuth,
  type ReadinessSink,
} from "@shoal/jetstream";
import type { EnsureModelOptions } from "@shoal/model-sources";
import {
  compileResidencyPolicyOptions,
  decodeHeartbeat,
  heartbeatSubject,
  modelOfWant,
  WANT_PREFIX,
  type ResidencyPolicyOptions,
} from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import type { Registry } from "prom-client";
import { handleApi } from "./api.js";
import { ModelFetcher } from "./fetcher.js";
import { ModelLoader } from "./model-loader.js";
import { ResidencyKv } from "./residency-kv.js";
import { LoaderMetrics } from "./loader-metrics.js";
import { WorkerRegistry } from "./worker-registry.js";

export interface ModelLoaderOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  readonly catalog: Catalog;
  /** This node's id; its workers run with the same `SHOAL_NODE_ID`. */
  readonly node: string;
  /** Placement and eviction knobs; see docs/model-loader.md. */
  readonly policy?: ResidencyPolicyOptions;
  /** How often demand is sampled and placement decided, ms. @default 500 */
  readonly tickMs?: number;
  /** A worker silent this long is gone, ms. @default 3× its heartbeat, here 3000 */
  readonly workerTimeoutMs?: number;
  /** Interval of the workers' heartbeats, ms. @default 1000 */
  readonly heartbeatMs?: number;
  /** How long a model whose load failed, or that cannot be placed, is left alone, ms. @default 60000 */
  readonly failureCooldownMs?: number;
  /** Longest a worker may take to load one model, ms. @default 600000 */
  readonly loadTimeoutMs?: number;
  /** Port of the HTTP API; 0 picks a free one. @default 8090 */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  readonly stream?: WorkStreamOptions;
  /** How missing weights are fetched (hub token, pip mirror, progress…). */
  readonly modelSources?: EnsureModelOptions;
  /** Where the loader registers its metrics (`booted.metrics`); none are kept without. */
  readonly metrics?: Registry;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
  /** Loads and unloads are traced with it. @default the global tracer (no-op unless installed) */
  readonly tracer?: Tracer;
}

export interface RunningModelLoader {
  /** Port the HTTP API listens on. */
  readonly port: number;
  readonly loader: ModelLoader;
  stop(): Promise<void>;
}

/**
 * The model-loader of one node: listens to its workers' heartbeats, decides every `tickMs`
 * which models they hold, and publishes residency to the KV bucket.
 */
export async function run(options: ModelLoaderOptions): Promise<RunningModelLoader> {
  const logger = options.logger.child({ node: options.node });
  const heartbeatMs = options.heartbeatMs ?? 1000;
  const tickMs = options.tickMs ?? 500;
  const nc: NatsConnection = await connectNats(
    options.natsServers,
    `shoal-model-loader-${options.node}`,
    options.natsAuth,
    options.readiness,
  );
  const jsm = await jetstreamManager(nc);
  const stream = await ensureWorkStream(jsm, options.stream);
  // Work for a model nobody serves yet must still be counted (and kept in order) somewhere.
  for (const m of options.catalog.models) {
    try {
      await jsm.consumers.info(stream, modelConsumerName(m.key));
    } catch {
      await ensureModelConsumer(jsm, stream, m.key);
    }
  }
  const kv = await ResidencyKv.open(nc, options.node, logger);
  const registry = new WorkerRegistry(options.workerTimeoutMs ?? 3 * heartbeatMs, 2 * heartbeatMs);
  // Read when scraped, so after the loader below exists.
  const metrics =
    options.metrics === undefined
      ? undefined
      : new LoaderMetrics(options.metrics, {
          copies: () => loader.copies(),
          blocked: () => loader.blocked(),
          workers: () => registry.all().length,
        });
  const loader: ModelLoader = new ModelLoader({
    nc,
    jsm,
    stream,
    catalog: options.catalog,
    registry,
    kv,
    fetcher: new ModelFetcher(options.modelSources ?? {}, logger),
    policy: compileResidencyPolicyOptions(options.policy),
    failureCooldownMs: options.failureCooldownMs ?? 60_000,
    controlTimeoutMs: options.loadTimeoutMs ?? 600_000,
    metrics,
    logger,
    tracer: options.tracer ?? trace.getTracer("shoal-model-loader"),
  });

  const sub = nc.subscribe(heartbeatSubject(options.node));
  void (async () => {
    for await (const msg of sub) {
      try {
        const change = registry.heartbeat(decodeHeartbeat(msg.data), performance.now(), Date.now());
        for (const r of change.removed) {
          logger.warn(r, "worker no longer holds a model; forgetting the copy");
          kv.removeReplica(r.model, r.worker);
        }
        for (const { worker, model } of change.upserted) {
          const replica = registry.get(worker)?.replicas.get(model);
          if (replica === undefined) continue;
          kv.replica({
            model,
            worker,
            state: replica.state,
            memoryBytes: replica.bytes,
            sinceUnixMs: replica.sinceUnixMs,
          });
        }
      } catch (err) {
        logger.warn({ err, subject: msg.subject }, "malformed heartbeat ignored");
      }
    }
  })();

  // Every node's loader hears every want: each may place the model on its own workers.
  const wants = nc.subscribe(`${WANT_PREFIX}.*`, {
    callback: (_, msg) => {
      const model = modelOfWant(msg.subject);
      if (model !== undefined) loader.want(model);
    },
  });

  let stopping = false;
  let round: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    // Rounds never overlap: a slow stream-info call delays the next one instead.
    round = round.then(async () => {
      if (!stopping) await loader.tick();
    });
  }, tickMs);

  const server: Server = createServer((req, res) => {
    handleApi({ node: options.node, catalog: options.catalog, loader, registry }, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8090, options.host ?? "127.0.0.1", () => {
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, models: options.catalog.models.length }, "model-loader placing");

  return {
    port,
    loader,
    async stop() {
      stopping = true;
      clearInterval(timer);
      await round;
      await loader.settle();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      sub.unsubscribe();
      wants.unsubscribe();
      await drainOrClose(nc);
      logger.info("model-loader stopped");
    },
  };
}
