/**
 * What only the `bootstrap` NATS user may do: make every stream and bucket Shoal uses, with the
 * settings the services would give them, before any service starts. The services' users may
 * read these but never create, change or delete them (docs/security.md, "NATS users").
 */
import { Kvm } from "@nats-io/kv";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AdapterStore } from "@shoal/adapters";
import { ensureBlobBucket } from "@shoal/blobs";
import { ensureDeadLetterStream, ensureModelConsumer, ensureWorkStream } from "@shoal/jetstream";
import { RESIDENCY_BUCKET } from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import { TenantStore, UsageMeter } from "@shoal/tenants";

export interface BootstrapOptions {
  /** The blob bucket's bound and its objects' age (the offloader's `SHOAL_BLOB_*`). */
  readonly blobStoreMaxBytes?: number | undefined;
  readonly blobTtlMs?: number | undefined;
  /** The adapter store's bound (the registry's `SHOAL_REGISTRY_STORE_MAX_BYTES`). */
  readonly adapterStoreMaxBytes?: number | undefined;
  /**
   * Copies of every stream and bucket across the NATS cluster (SHOAL_STREAM_REPLICAS): 1 for
   * one server, 3 for a cluster that keeps every accepted item through the loss of a server.
   * @default 1
   */
  readonly replicas?: number | undefined;
  /**
   * Catalog keys whose work consumers to make now. A model's consumer otherwise appears when a
   * model-loader or worker first serves it; made here, its queue is counted (and an autoscaler
   * sees its lag) while no worker of its pool runs.
   */
  readonly modelKeys?: readonly string[] | undefined;
  /** The consumers' ack wait (SHOAL_ACK_WAIT_MS, as the workers are given). */
  readonly ackWaitMs?: number | undefined;
}

/** How long the bootstrap waits for JetStream to answer: a new cluster elects a leader first. */
const JETSTREAM_WAIT_MS = 120_000;

/**
 * Waits until JetStream answers. Servers of a new cluster start before they have elected the
 * leader that creates streams; a bootstrap started with them (a Helm install) waits for it.
 */
async function untilJetStream(nc: NatsConnection, logger: Logger): Promise<JetStreamManager> {
  const deadline = Date.now() + JETSTREAM_WAIT_MS;
  for (;;) {
    try {
      // Asks for the account's JetStream info, which only a cluster with a leader answers.
      return await jetstreamManager(nc);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      logger.warn(
        { err },
        "JetStream not answering yet; waiting for the cluster to elect a leader",
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export async function bootstrapNats(
  nc: NatsConnection,
  logger: Logger,
  options: BootstrapOptions = {},
): Promise<string[]> {
  const replicas = options.replicas ?? 1;
  const jsm = await untilJetStream(nc, logger);
  const stream = await ensureWorkStream(jsm, { replicas });
  for (const key of options.modelKeys ?? []) {
    await ensureModelConsumer(jsm, stream, key, { ackWaitMs: options.ackWaitMs });
  }
  await ensureDeadLetterStream(jsm, { replicas });
  await new Kvm(nc).create(RESIDENCY_BUCKET, { history: 1, replicas });
  (await TenantStore.open(nc, logger, { replicas })).stop();
  await (await UsageMeter.open(nc, logger, { replicas })).stop();
  await AdapterStore.open(nc, { logger, maxBytes: options.adapterStoreMaxBytes, replicas });
  // The offloader keeps blobs twice their TTL, as its own start would.
  const ttlMs = options.blobTtlMs ?? 10 * 60_000;
  await ensureBlobBucket(nc, {
    maxBytes: options.blobStoreMaxBytes,
    maxAgeMs: 2 * ttlMs,
    replicas,
  });
  const names: string[] = [];
  for await (const name of jsm.streams.names()) names.push(name);
  return names.sort();
}
