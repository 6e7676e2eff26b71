/**
 * The offloader's NATS protocol. Control travels in headers and bytes in payloads, so nothing
 * is encoded twice. An upload is a request/reply conversation with one offloader replica: the
 * `open` request (queue group, any replica) names the chunk subject that replica listens on;
 * every chunk is a request answered once it is written, so a slow store slows the sender
 * instead of filling a buffer.
 */
export const BlobSubjects = {
  open: "shoal.blob.v1.open",
  remove: "shoal.blob.v1.remove",
  /** Prefix of the per-upload chunk subjects: `<prefix>.<offloader-id>.<upload-id>`. */
  chunk: "shoal.blob.v1.chunk",
} as const;

export const OFFLOADER_QUEUE = "blob-offloader";

/** The Object Store bucket blobs live in (stream `OBJ_SHOAL_BLOBS`). */
export const BLOB_BUCKET = "SHOAL_BLOBS";

export const BlobHeaders = {
  /** On `open`: the bytes the upload will carry. */
  size: "Shoal-Blob-Size",
  /** On the `open` reply: where chunks go. */
  upload: "Shoal-Blob-Upload",
  /** On the last chunk. */
  last: "Shoal-Blob-Last",
  /** On the last chunk's reply. */
  name: "Shoal-Blob-Name",
  sha256: "Shoal-Blob-Sha256",
  /** On any reply: why the offloader refused; the upload is over. */
  error: "Shoal-Blob-Error",
} as const;

/** Bytes per chunk: well below NATS's default 1 MiB payload limit. */
export const CHUNK_BYTES = 256 * 1024;
