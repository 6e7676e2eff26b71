import type { NatsConnection } from "@nats-io/transport-node";
import { ConfigError } from "@shoal/config";
import { envOptional, envString, type Env } from "@shoal/process";
import type { Logger } from "@shoal/telemetry";
import { ensureBlobBucket, openBlobBucket, type BlobBucketOptions } from "./bucket.js";
import { S3Blobs, type S3BlobOptions } from "./s3-store.js";
import type { BlobStore } from "./store.js";

/** Which store holds blobs: the offloader and every worker must name the same one. */
export type BlobStoreSettings =
  | { readonly backend: "nats" }
  | ({ readonly backend: "s3" } & S3BlobOptions);

/**
 * Reads `SHOAL_BLOB_STORE` (`nats`, the default, or `s3`) and, for `s3`, `SHOAL_BLOB_S3_BUCKET`,
 * `SHOAL_BLOB_S3_PREFIX`, `SHOAL_BLOB_S3_ENDPOINT` and `SHOAL_BLOB_S3_REGION` (else
 * `AWS_REGION`). Credentials come from the AWS SDK's default chain.
 */
export function blobStoreFromEnv(env: Env): BlobStoreSettings {
  const backend = envString(env, "SHOAL_BLOB_STORE", "nats");
  if (backend === "nats") return { backend };
  if (backend !== "s3") {
    throw new ConfigError(`SHOAL_BLOB_STORE must be nats or s3, got "${backend}"`);
  }
  const bucket = envOptional(env, "SHOAL_BLOB_S3_BUCKET");
  if (bucket === undefined) {
    throw new ConfigError("SHOAL_BLOB_S3_BUCKET must be set with SHOAL_BLOB_STORE=s3");
  }
  const endpoint = envOptional(env, "SHOAL_BLOB_S3_ENDPOINT");
  if (endpoint !== undefined && !/^https?:$/.test(URL.parse(endpoint)?.protocol ?? "")) {
    throw new ConfigError(`SHOAL_BLOB_S3_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  }
  return {
    backend,
    bucket,
    prefix: envOptional(env, "SHOAL_BLOB_S3_PREFIX"),
    endpoint,
    region: envOptional(env, "SHOAL_BLOB_S3_REGION") ?? envOptional(env, "AWS_REGION"),
  };
}

/**
 * The offloader's store, ready to take blobs: the Object Store bucket is created if missing;
 * an S3 bucket must exist already (buckets and their policies are the operator's), and one
 * that is missing or forbidden stops the start here rather than failing every upload.
 */
export async function ensureBlobStore(
  nc: NatsConnection,
  settings: BlobStoreSettings,
  options: { readonly bucket?: BlobBucketOptions; readonly logger?: Logger } = {},
): Promise<BlobStore> {
  if (settings.backend === "nats") return ensureBlobBucket(nc, options.bucket);
  const store = new S3Blobs(settings, options.logger);
  try {
    await store.check();
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}

/** A reader's handle on the store (workers), created by the offloader. */
export function openBlobStore(
  nc: NatsConnection,
  settings: BlobStoreSettings,
  logger?: Logger,
): Promise<BlobStore> {
  return settings.backend === "nats"
    ? openBlobBucket(nc)
    : Promise.resolve(new S3Blobs(settings, logger));
}
