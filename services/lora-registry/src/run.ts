import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AdapterStore } from "@shoal/adapters";
import { connectNats, drainOrClose } from "@shoal/jetstream";
import { extractContext, httpHeaderCarrier } from "@shoal/telemetry";
import { RequestAuth, TenantStore } from "@shoal/tenants";
import { compileEnsureModelOptions } from "@shoal/model-sources";
import { BaseShapes } from "./base-shapes.js";
import { toHttpError } from "./error-table.js";
import { UnavailableError } from "./errors.js";
import { compileRegistryOptions, type LoraRegistryOptions } from "./options.js";
import { sendError } from "./respond.js";
import { operationOf, RegistryMetrics } from "./registry-metrics.js";
import { Router } from "./router.js";
import { routes } from "./routes.js";
import { RegistryAuth } from "./registry-auth.js";
import { UploadSlots } from "./upload-slots.js";

export type { LoraRegistryOptions } from "./options.js";

export interface RunningLoraRegistry {
  /** The port the API listens on. */
  readonly port: number;
  /** Stops taking requests, lets uploads in progress finish within the grace period, drains NATS. */
  stop(): Promise<void>;
}

/**
 * Slowest an upload may be as a whole, ms: the idle timeout catches a stalled client, this one
 * a client that trickles a byte at a time.
 */
const REQUEST_TIMEOUT_MS = 15 * 60_000;

/**
 * The LoRA adapter registry: a REST API (node:http, JSON) where tenants upload PEFT adapters
 * for the catalog's generator models, which are validated against the base model's shape and
 * stored in JetStream (`@shoal/adapters`), and list and delete them.
 */
export async function run(options: LoraRegistryOptions): Promise<RunningLoraRegistry> {
  const compiled = compileRegistryOptions(options);
  const { logger } = options;
  const tracer = options.tracer ?? trace.getTracer("shoal-lora-registry");
  const nc = await connectNats(
    options.natsServers,
    "shoal-lora-registry",
    options.natsAuth,
    options.readiness,
  );
  const store = await AdapterStore.open(nc, { maxBytes: compiled.storeMaxBytes, logger });
  const tenants = compiled.access === "keys" ? await TenantStore.open(nc, logger) : undefined;
  const auth = new RegistryAuth(
    tenants === undefined ? RequestAuth.open(logger) : RequestAuth.keys(tenants, logger),
  );
  let stopping = false;

  const uploads = new UploadSlots(compiled.maxConcurrentUploads);
  const metrics =
    options.metrics === undefined
      ? undefined
      : new RegistryMetrics(options.metrics, () => uploads.active);
  const router = routes(new Router(), {
    catalog: options.catalog,
    store,
    auth,
    shapes: new BaseShapes(compileEnsureModelOptions({ logger, ...options.modelSources })),
    uploads,
    options: compiled,
    healthy: () => !stopping && !nc.isClosed(),
    logger: ({ req }) => logger.child({ request_id: requestId(req) }),
    metrics,
  });

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const operation = operationOf(req.method, new URL(req.url ?? "/", "http://registry").pathname);
    // Health probes come every few seconds and would bury the traces that matter.
    const span =
      operation === "health"
        ? undefined
        : tracer.startSpan(
            `registry.${operation}`,
            { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "" } },
            extractContext(httpHeaderCarrier(req.headers)),
          );
    res.once("close", () => {
      span?.setAttribute("http.response.status_code", res.statusCode);
      if (res.statusCode >= 500 || !res.writableFinished) {
        span?.setStatus({ code: SpanStatusCode.ERROR, message: `status ${res.statusCode}` });
      }
      span?.end();
    });
    res.once("finish", () => {
      const path = new URL(req.url ?? "/", "http://registry").pathname;
      // Paths and statuses only: tokens travel in a header that is never logged.
      logger.info(
        {
          request_id: requestId(req),
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
        },
        "request",
      );
      metrics?.answered(req.method, path, res.statusCode);
    });
    const respond = async (): Promise<void> => {
      if (stopping && req.url !== "/healthz") {
        throw new UnavailableError("the registry is shutting down", 5);
      }
      await router.match(req, res)();
    };
    respond().catch((error: unknown) => {
      const answer = toHttpError(error);
      // The request itself is destroyed once read to its end; only a closed socket means the
      // client is gone.
      if (req.socket.destroyed || res.destroyed) {
        logger.info({ request_id: requestId(req), err: error }, "client went away");
        return;
      }
      if (answer.status >= 500) {
        logger.error({ request_id: requestId(req), err: error }, "request failed");
      }
      sendError(req, res, answer);
    });
  };

  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS }, handle);
  // With a listener, Node leaves `Expect: 100-continue` to us: an upload refused by its
  // headers (auth, size, base) is answered before the client sends the body at all.
  server.on("checkContinue", handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(compiled.port, compiled.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const sweep = (): void => {
    store.sweep().then(
      (swept) => {
        if (swept.objects + swept.reservations > 0) logger.info(swept, "interrupted uploads swept");
      },
      (err: unknown) => {
        logger.warn({ err }, "sweep of interrupted uploads failed; retrying next interval");
      },
    );
  };
  sweep();
  const sweeper = setInterval(sweep, compiled.sweepIntervalMs);

  logger.info(
    {
      port,
      host: compiled.host,
      access: compiled.access,
      max_upload_bytes: compiled.maxUploadBytes,
      max_rank: compiled.maxRank,
    },
    "lora registry listening",
  );
  if (tenants === undefined) {
    logger.warn(
      "no API keys (SHOAL_AUTH is not keys): single-tenant, every request acts as default",
    );
  }

  return {
    port,
    async stop() {
      stopping = true;
      clearInterval(sweeper);
      const closed = new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      server.closeIdleConnections();
      const grace = setTimeout(() => {
        server.closeAllConnections();
      }, compiled.shutdownGraceMs);
      await closed;
      clearTimeout(grace);
      tenants?.stop();
      await drainOrClose(nc);
      logger.info("lora registry stopped");
    },
  };
}

/** The caller's request id when it sent a sane one, else a fresh one, fixed per request. */
function requestId(req: IncomingMessage): string {
  const cached = ids.get(req);
  if (cached !== undefined) return cached;
  const sent = req.headers["x-request-id"];
  const id = typeof sent === "string" && /^[\w.:-]{1,128}$/.test(sent) ? sent : randomUUID();
  ids.set(req, id);
  return id;
}

const ids = new WeakMap<IncomingMessage, string>();
