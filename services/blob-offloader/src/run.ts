import { randomUUID } from "node:crypto";
import {
  ensureBlobStore,
  serveBlobs,
  startSweeper,
  type BlobServer,
  type BlobStoreSettings,
} from "@shoal/blobs";
import { connectNats, drainOrClose, type NatsAuth, type ReadinessSink } from "@shoal/jetstream";
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "@shoal/telemetry";
import type { Registry } from "prom-client";
import { OffloaderMetrics } from "./offloader-metrics.js";

export interface BlobOffloaderOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  /** Where blobs are kept; workers must be given the same. @default the JetStream Object Store */
  readonly store?: BlobStoreSettings;
  /** Names this replica's upload subjects. @default a random id */
  readonly offloaderId?: string;
  /** Largest blob accepted, bytes. @default 64 MiB */
  readonly maxBlobBytes?: number;
  /**
   * Bound on all stored blobs together, bytes; set when the Object Store bucket is created (an
   * S3 bucket's bounds are its own). @default 4 GiB
   */
  readonly storeMaxBytes?: number;
  /**
   * Age past which a blob is deleted even though no one asked, ms. Longer than any request's
   * deadline (ingress caps them at 5 min), so only orphans are swept. @default 600000
   */
  readonly ttlMs?: number;
  /** Time between TTL sweeps, ms. @default 30000 */
  readonly sweepIntervalMs?: number;
  /** An upload silent for this long is abandoned, ms. @default 30000 */
  readonly idleTimeoutMs?: number;
  /** Where the offloader registers its metrics (`booted.metrics`); none are kept without. */
  readonly metrics?: Registry | undefined;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
  /** Uploads are traced with it. @default the global tracer (no-op unless installed) */
  readonly tracer?: Tracer;
}

export interface RunningBlobOffloader {
  stop(): Promise<void>;
}

/**
 * Stores inputs too large for the work queue in the blob store while their request waits, deletes them when ingress says the request is answered, and sweeps those older than
 * the TTL, so the store never keeps a blob nobody will ask for.
 */
export async function run(options: BlobOffloaderOptions): Promise<RunningBlobOffloader> {
  const { logger } = options;
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const nc = await connectNats(
    options.natsServers,
    "shoal-blob-offloader",
    options.natsAuth,
    options.readiness,
  );
  const store = await ensureBlobStore(nc, options.store ?? { backend: "nats" }, {
    bucket: { maxBytes: options.storeMaxBytes, maxAgeMs: 2 * ttlMs },
    logger,
  }).catch(async (err: unknown) => {
    await drainOrClose(nc);
    throw err;
  });
  // Read when scraped, so after the server below exists.
  const metrics =
    options.metrics === undefined
      ? undefined
      : new OffloaderMetrics(options.metrics, () => server.uploads);
  const server: BlobServer = serveBlobs({
    nc,
    store,
    offloaderId: options.offloaderId ?? randomUUID().slice(0, 8),
    maxBlobBytes: options.maxBlobBytes,
    idleTimeoutMs: options.idleTimeoutMs,
    events: metrics,
    logger,
    tracer: options.tracer,
  });
  const sweeper = startSweeper({
    store,
    ttlMs,
    intervalMs: options.sweepIntervalMs ?? 30_000,
    onSweep:
      metrics === undefined
        ? undefined
        : (swept) => {
            metrics.swept(swept);
          },
    logger,
  });
  await nc.flush();
  logger.info({ ttl_ms: ttlMs, store: store.description }, "blob offloader serving");
  return {
    async stop() {
      await server.stop();
      await sweeper.stop();
      store.close();
      await drainOrClose(nc);
    },
  };
}
