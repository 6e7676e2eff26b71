import type { Registry } from "prom-client";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Tracer } from "@opentelemetry/api";
import { Annotator, Backlog } from "@shoal/annotation";
import type { Catalog } from "@shoal/config";
import { AdapterStore } from "@shoal/adapters";
import { Gateway, PublishedAdapters, StreamGateway, type AccessMode } from "@shoal/gateway";
import { RequestAuth, TenantQuotas, TenantStore, UsageMeter } from "@shoal/tenants";
import {
  ensureWorkStream,
  type WorkStreamOptions,
  connectNats,
  drainOrClose,
  StreamPublisher,
  type NatsAuth,
  type ReadinessSink,
} from "@shoal/jetstream";
import { Health, InferenceService, reflectionV1, reflectionV1alpha } from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { handleAdmin, isAdminPath } from "./admin/admin-routes.js";
import { authInterceptor } from "./connect/auth-interceptor.js";
import { EdgeAuth } from "./edge-auth.js";
import { IngressTenantAccounting } from "./tenant-accounting.js";
import { TenantMetrics } from "./tenant-metrics.js";
import { healthRoutes } from "./connect/health-service.js";
import { inferenceRoutes } from "./connect/inference-service.js";
import { reflectionRoutes } from "./connect/reflection-service.js";
import { followNatsStatus, ServingStatus } from "./connect/serving-status.js";
import { blobOffload } from "./blob-offload.js";
import { listenDual } from "./listen.js";
import { IngressMetrics } from "./metrics.js";
import { registerQueueMetrics } from "./queue-metrics.js";
import { handleRest, isRestPath } from "./rest/routes.js";
import { isGrpcEmbed, serveGrpcEmbed } from "./grpc/embed.js";
import { refuseOversizedRpc } from "./connect/body-limit.js";
import { refuseWrongMethod, rpcPaths } from "./connect/method-check.js";
import { ResidencyView } from "@shoal/residency";

/**
 * Room in a NATS message for a work item's fields, headers and protobuf framing beside its
 * inputs' text; an input larger than the message less this is offloaded.
 */
const ITEM_ENVELOPE_BYTES = 64 * 1024;

/** Bytes of input one queued part carries at most: a quarter of NATS's default payload. */
const DEFAULT_PART_MAX_BYTES = 256 * 1024;

export interface IngressOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  readonly catalog: Catalog;
  /** @default 8080; 0 picks a free port */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** Largest request body read, in bytes; larger ones get 413 before they are buffered. @default 8 MiB */
  readonly maxBodyBytes?: number;
  /**
   * Inputs larger than this many UTF-8 bytes go to the blob offloader instead of the queue;
   * with no offloader running such requests get 503. Lowered to what fits one NATS message
   * (the server's `max_payload` less 64 KiB) when set above it. @default 1 MiB
   */
  readonly offloadThresholdBytes?: number;
  /** Deadline of requests whose client sets none, ms. @default 30000 */
  readonly defaultTimeoutMs?: number;
  /**
   * Silence from a generation's worker after its first event before the stream is given up
   * with UNAVAILABLE (the worker died midway), ms. @default 60000
   */
  readonly streamIdleTimeoutMs?: number;
  /** Requests held at once before new ones get 429. @default 10000 */
  readonly maxPending?: number;
  /** Most padded tokens (`inputs × longest`) one queued part carries. @default 8192 */
  readonly partMaxPaddedTokens?: number;
  /** Most inputs one queued part carries. @default 64 */
  readonly partMaxInputs?: number;
  /** Items queued per model before 429. @default 50000 */
  readonly maxQueuedPerModel?: number;
  /** The work stream's limits, when this ingress is the first to create it. */
  readonly stream?: WorkStreamOptions;
  /** Time open connections get to finish on shutdown, ms. @default 10000 */
  readonly shutdownGraceMs?: number;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
  readonly tracer: Tracer;
  /** Where ingress registers its request metrics (`booted.metrics`); none are kept without. */
  readonly metrics?: Registry;
  /**
   * `keys`: every inference request needs an API key of a tenant in the `SHOAL_TENANTS` KV
   * bucket, and may use only what its tenant's grants name. @default "open"
   */
  readonly access?: AccessMode;
  /** Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this certificate chain and key, PEM. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
}

export interface RunningIngress {
  readonly port: number;
  readonly gateway: Gateway;
  stop(): Promise<void>;
}

/** Starts the ingress: every client protocol on one port, answering from the work pipeline. */
export async function run(options: IngressOptions): Promise<RunningIngress> {
  const { logger, tracer, catalog } = options;

  const nc = await connectNats(
    options.natsServers,
    "shoal-ingress",
    options.natsAuth,
    options.readiness,
  );
  const status = new ServingStatus();
  followNatsStatus(nc, status, logger).catch((err: unknown) => {
    logger.error({ err }, "following the NATS connection status failed");
  });
  const jsm = await jetstreamManager(nc);
  const stream = await ensureWorkStream(jsm, options.stream);
  const metrics =
    options.metrics === undefined ? undefined : new IngressMetrics(options.metrics, catalog);
  const arrivals =
    options.metrics === undefined
      ? undefined
      : registerQueueMetrics(options.metrics, jsm, stream, catalog, logger);
  const backlog = new Backlog({
    jsm,
    stream,
    catalog,
    maxQueuedPerModel: options.maxQueuedPerModel,
    logger,
  });
  await backlog.start();
  // Requests are annotated and queued here, in the process that holds them: no hop to
  // another service and back before anything is queued.
  const publisher = new StreamPublisher(nc);
  // Every work item must fit one NATS message: inputs too big to share one go to the blob
  // store, and parts are cut by bytes below that.
  const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
  const offloadThresholdBytes = Math.min(
    options.offloadThresholdBytes ?? 1024 * 1024,
    maxPayload - ITEM_ENVELOPE_BYTES,
  );
  const annotator = new Annotator({
    catalog,
    publisher,
    logger,
    tracer,
    backlog,
    partMaxPaddedTokens: options.partMaxPaddedTokens,
    partMaxInputs: options.partMaxInputs,
    partMaxBytes: Math.min(DEFAULT_PART_MAX_BYTES, offloadThresholdBytes),
    onQueued: arrivals,
  });
  logger.info({ vocabularies: await annotator.preloadVocabularies() }, "vocabularies read");
  const access = options.access ?? "open";
  const tenants = access === "keys" ? await TenantStore.open(nc, logger) : undefined;
  const usage = access === "keys" ? await UsageMeter.open(nc, logger) : undefined;
  const accounting =
    usage === undefined
      ? undefined
      : new IngressTenantAccounting(
          new TenantQuotas(),
          usage,
          logger,
          options.metrics === undefined ? undefined : new TenantMetrics(options.metrics),
        );
  const auth = new EdgeAuth(
    tenants === undefined ? RequestAuth.open(logger) : RequestAuth.keys(tenants, logger),
  );
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
    offload: blobOffload(nc, offloadThresholdBytes, tracer),
    residency,
    access,
    accounting,
  });
  if (options.metrics !== undefined) {
    IngressMetrics.countDuplicateAnswers(options.metrics, () => gateway.duplicateAnswers);
  }
  const streams = await StreamGateway.start({
    nc,
    annotator,
    catalog,
    logger,
    defaultTimeoutMs: options.defaultTimeoutMs,
    idleTimeoutMs: options.streamIdleTimeoutMs,
    residency,
    adapters,
    access,
    accounting,
  });
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const connectHandler = connectNodeAdapter({
    routes: (router) => {
      inferenceRoutes({ gateway, streams, tracer, metrics, logger })(router);
      healthRoutes({ status, services: [InferenceService] })(router);
      reflectionRoutes([InferenceService, Health])(router);
    },
    readMaxBytes: maxBodyBytes,
    interceptors: [authInterceptor(auth, { tracer, metrics, logger })],
    // A path no route or RPC serves gets a body saying so, in Connect's error shape, rather
    // than an empty 404.
    fallback: (req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const body = JSON.stringify({
        code: "not_found",
        message: `no route ${path}: REST routes are under /v1/, RPCs under /${InferenceService.typeName}/`,
      });
      res.writeHead(404, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    },
  });
  const rest = { gateway, streams, tracer, metrics, logger, maxBodyBytes, auth };
  const rpcs = rpcPaths([
    InferenceService,
    Health,
    reflectionV1.ServerReflection,
    reflectionV1alpha.ServerReflection,
  ]);
  const server = await listenDual(
    (req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      if (isRestPath(path)) {
        void handleRest(req, res, rest);
      } else if (isAdminPath(path)) {
        void handleAdmin(req, res, { auth, tenants, usage, logger });
      } else if (refuseWrongMethod(req, res, path, rpcs)) {
        return;
      } else if (refuseOversizedRpc(req, res, maxBodyBytes)) {
        return;
      } else if (req.httpVersionMajor === 2 && isGrpcEmbed(req as Http2ServerRequest)) {
        void serveGrpcEmbed(req as Http2ServerRequest, res as Http2ServerResponse, rest);
      } else {
        connectHandler(req, res);
      }
    },
    options.port ?? 8080,
    options.host ?? "127.0.0.1",
    options.tls === undefined ? {} : { tls: options.tls },
  );
  logger.info(
    {
      port: server.port,
      bundle: options.catalog.bundle?.path ?? "none",
      access,
      tls: options.tls !== undefined,
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
      tenants?.stop();
      await usage?.stop();
      backlog.stop();
      publisher.close();
      await drainOrClose(nc);
    },
  };
}
