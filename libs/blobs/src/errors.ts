/** The blob offloader could not be reached or did not answer in time. */
export class BlobStoreUnavailableError extends Error {
  override readonly name = "BlobStoreUnavailableError";
}

/** The offloader refused an upload (too large, store full); its message is client-safe. */
export class BlobRefusedError extends Error {
  override readonly name = "BlobRefusedError";
}

/** A referenced blob is gone (answered already, or swept after its TTL) or not what was stored. */
export class BlobMissingError extends Error {
  override readonly name = "BlobMissingError";
}
