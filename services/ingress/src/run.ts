import { connectNodeAdapter } from "@connectrpc/connect-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Tracer } from "@opentelemetry/api";
import { Annotator, Backlog, RemoteAnnotator, type Annotate } from "@shoal/annotation";
import type { Catalog } from "@shoal/config";
import { AdapterStore } from "@shoal/adapters";
import { Gateway, PublishedAdapters, StreamGateway } from "@shoal/gateway";
import {
  ensureWorkStream,
  type WorkStreamOptions,
  connectNats,
  drainOrClose,
} from "@shoal/jetstream";
import { Health, InferenceService } from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { healthRoutes } from "./connect/health-service.js";
import { inferenceRoutes } from "./connect/inference-service.js";
import { reflectionRoutes } from "./connect/reflection-service.js";
import { followNatsStatus, ServingStatus } from "./connect/serving-status.js";
import { blobOffload } from "./blob-offload.js";
import { listenDual } from "./listen.js";
import { handleRest, isRestPath } from "./rest/routes.js";
import { ResidencyView } from "@shoal/residency";

export interface IngressOptions {
  readonly natsServers: string | readonly string[];
  readonly catalog: Catalog;
  /** @default 8080; 0 picks a free port */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /**
   * `remote` sends each request to the annotator service over NATS; `inprocess` annotates in
   * this process, which saves a hop on a single node. @default "remote"
   */
  readonly annotator?: "remote" | "inprocess";
  /** Largest request body read, in bytes; larger ones get 413 before they are buffered. @default 8 MiB */
  readonly maxBodyBytes?: number;
  /**
   * Inputs larger than this many UTF-8 bytes go to the blob offloader instead of the queue;
   * with no offloader running such requests get 503. @default 1 MiB
   */
  readonly offloadThresholdBytes?: number;
  /** Deadline of requests whose client sets none, ms. @default 30000 */
  readonly defaultTimeoutMs?: number;
  /** Requests held at once before new ones get 429. @default 10000 */
  readonly maxPending?: number;
  /** With `annotator: "inprocess"`: items queued per model before 429. @default 50000 */
  readonly maxQueuedPerModel?: number;
  /** Only used with `annotator: "inprocess"`, which creates the stream itself. */
  readonly stream?: WorkStreamOptions;
  /** Time open connections get to finish on shutdown, ms. @default 10000 */
  readonly shutdownGraceMs?: number;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

export interface RunningIngress {
  readonly port: number;
  readonly gateway: Gateway;
  stop(): Promise<void>;
}

/** Starts the ingress: every client protocol on one port, answering from the work pipeline. */
export async function run(options: IngressOptions): Promise<RunningIngress> {
  const { logger, tracer, catalog } = options;
  const nc = await connectNats(options.natsServers, "shoal-ingress");
  const status = new ServingStatus();
  followNatsStatus(nc, status, logger).catch((err: unknown) => {
    logger.error({ err }, "following the NATS connection status failed");
  });
  let annotator: Annotate;
  let backlog: Backlog | undefined;
  if (options.annotator === "inprocess") {
    const jsm = await jetstreamManager(nc);
    const stream = await ensureWorkStream(jsm, options.stream);
    backlog = new Backlog({
      jsm,
      stream,
      catalog,
      maxQueuedPerModel: options.maxQueuedPerModel,
      logger,
    });
    await backlog.start();
    const inProcess = new Annotator({ catalog, js: jetstream(nc), logger, tracer, backlog });
    logger.info({ tokenizers: await inProcess.preloadTokenizers() }, "tokenizers loaded");
    annotator = inProcess;
  } else {
    annotator = new RemoteAnnotator({ nc });
  }
  const residency = await ResidencyView.start(nc, logger);
  // The LoRA adapters the registry has published: generation requests may name them.
  const adapters = await PublishedAdapters.follow(await AdapterStore.open(nc, { logger }), logger);
  const gateway = await Gateway.start({
    nc,
    annotator,
    catalog,
    logger,
    defaultTimeoutMs: options.defaultTimeoutMs,
    maxPending: options.maxPending,
    offload: blobOffload(nc, options.offloadThresholdBytes ?? 1024 * 1024, tracer),
    residency,
  });
  const streams = await StreamGateway.start({
    nc,
    annotator,
    catalog,
    logger,
    defaultTimeoutMs: options.defaultTimeoutMs,
    residency,
    adapters,
  });
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const connectHandler = connectNodeAdapter({
    routes: (router) => {
      inferenceRoutes({ gateway, streams, tracer, logger })(router);
      healthRoutes({ status, services: [InferenceService] })(router);
      reflectionRoutes([InferenceService, Health])(router);
    },
    readMaxBytes: maxBodyBytes,
  });
  const rest = { gateway, streams, tracer, logger, maxBodyBytes };
  const server = await listenDual(
    (req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      if (isRestPath(path)) {
        void handleRest(req, res, rest);
      } else {
        connectHandler(req, res);
      }
    },
    options.port ?? 8080,
    options.host ?? "127.0.0.1",
  );
  logger.info(
    {
      port: server.port,
      annotator: options.annotator ?? "remote",
      bundle: options.catalog.bundle?.path ?? "none",
    },
    "ingress listening",
  );
  return {
    port: server.port,
    gateway,
    async stop() {
      // First, so health watchers hear NOT_SERVING and their streams end before the server
      // waits for open streams to finish.
      status.shutDown();
      await server.close(options.shutdownGraceMs ?? 10_000);
      await gateway.close();
      streams.close();
      await adapters.stop();
      residency.stop();
      backlog?.stop();
      await drainOrClose(nc);
    },
  };
}
