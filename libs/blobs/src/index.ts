/**
 * Large inputs outside the queue: the blob offloader's NATS protocol (upload in chunks,
 * remove), its server side, the TTL sweep, and the checked fetch workers use. Blobs live in
 * the JetStream Object Store bucket `SHOAL_BLOBS` or, configured so, in an S3-compatible
 * bucket.
 */
export {
  BLOB_BUCKET,
  BlobHeaders,
  BlobSubjects,
  CHUNK_BYTES,
  OFFLOADER_QUEUE,
} from "./protocol.js";
export { BlobMissingError, BlobRefusedError, BlobStoreUnavailableError } from "./errors.js";
export { BlobUploader } from "./uploader.js";
export type { BlobInfo, BlobUploaderOptions } from "./uploader.js";
export type { BlobStore, StoredBlob } from "./store.js";
export { ObjectStoreBlobs } from "./object-store.js";
export { DEFAULT_S3_PREFIX, S3Blobs } from "./s3-store.js";
export type { S3BlobOptions } from "./s3-store.js";
export { ensureBlobBucket, openBlobBucket } from "./bucket.js";
export type { BlobBucketOptions } from "./bucket.js";
export { blobStoreFromEnv, ensureBlobStore, openBlobStore } from "./settings.js";
export type { BlobStoreSettings } from "./settings.js";
export { fetchBlob } from "./fetch.js";
export { serveBlobs } from "./server.js";
export type { BlobServer, BlobServerEvents, BlobServerOptions } from "./server.js";
export { startSweeper, sweepExpired } from "./sweeper.js";
export type { SweeperOptions } from "./sweeper.js";
