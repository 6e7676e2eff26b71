import { createHash } from "node:crypto";
import { BlobMissingError } from "./errors.js";
import type { BlobStore } from "./store.js";
import type { BlobInfo } from "./uploader.js";

/**
 * Reads a referenced blob, checking it is the one the work item was made with: a blob that
 * is gone (its request was answered, or it outlived its TTL) or differs is a `BlobMissingError`.
 */
export async function fetchBlob(store: BlobStore, ref: BlobInfo): Promise<Uint8Array> {
  const data = await store.get(ref.name);
  if (data === null) throw new BlobMissingError(`offloaded input ${ref.name} is gone`);
  const sha256 = createHash("sha256").update(data).digest("hex");
  if (data.byteLength !== ref.size || sha256 !== ref.sha256) {
    throw new BlobMissingError(`offloaded input ${ref.name} is not the one referenced`);
  }
  return data;
}
