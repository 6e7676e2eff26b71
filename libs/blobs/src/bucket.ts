import { Objm, StorageType } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { ObjectStoreBlobs } from "./object-store.js";
import { BLOB_BUCKET } from "./protocol.js";

export interface BlobBucketOptions {
  /** Bound on stored bytes; a full bucket refuses new blobs (503). @default 4 GiB */
  readonly maxBytes?: number;
  /**
   * Age past which the server itself drops anything in the bucket, ms: a backstop under the
   * offloader's own TTL sweep for chunks an interrupted upload could leave without metadata
   * (which the sweep, reading metadata, cannot see). Set when the bucket is created.
   * @default 20 min
   */
  readonly maxAgeMs?: number;
  /** Copies across a NATS cluster, when the bucket is created. @default 1 */
  readonly replicas?: number;
}

/** Creates (or opens) the Object Store blob bucket. */
export async function ensureBlobBucket(
  nc: NatsConnection,
  options: BlobBucketOptions = {},
): Promise<ObjectStoreBlobs> {
  const bucket = await new Objm(nc).create(BLOB_BUCKET, {
    storage: StorageType.File,
    max_bytes: options.maxBytes ?? 4 * 1024 ** 3,
    ttl: (options.maxAgeMs ?? 20 * 60_000) * 1_000_000,
    replicas: options.replicas ?? 1,
  });
  return new ObjectStoreBlobs(bucket);
}

/** Opens the Object Store blob bucket without creating it (workers read from it). */
export async function openBlobBucket(nc: NatsConnection): Promise<ObjectStoreBlobs> {
  return new ObjectStoreBlobs(await new Objm(nc).open(BLOB_BUCKET));
}
