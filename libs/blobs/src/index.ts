/**
 * Large inputs outside the queue: the blob offloader's NATS protocol (upload in chunks,
 * remove), its server side, the TTL sweep, and the checked fetch workers use. Blobs live in
 * the JetStream Object Store bucket `SHOAL_BLOBS`.
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
export { ensureBlobBucket, openBlobBucket } from "./bucket.js";
export type { BlobBucketOptions } from "./bucket.js";
export { fetchBlob } from "./fetch.js";
export { serveBlobs } from "./server.js";
export type { BlobServer, BlobServerOptions } from "./server.js";
export { startSweeper, sweepExpired } from "./sweeper.js";
export type { SweeperOptions } from "./sweeper.js";
