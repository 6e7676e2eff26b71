import type { ObjectStore } from "@nats-io/obj";
import { BLOB_BUCKET } from "./protocol.js";
import type { BlobStore, StoredBlob } from "./store.js";

/** Blobs as objects of the JetStream Object Store bucket `SHOAL_BLOBS`. */
export class ObjectStoreBlobs implements BlobStore {
  readonly description = `nats:${BLOB_BUCKET}`;

  constructor(readonly bucket: ObjectStore) {}

  async put(name: string, _size: number, body: ReadableStream<Uint8Array>): Promise<void> {
    // The Object Store writes chunks as it reads and purges them when the stream errors.
    await this.bucket.put({ name }, body);
  }

  get(name: string): Promise<Uint8Array | null> {
    return this.bucket.getBlob(name);
  }

  async delete(name: string): Promise<void> {
    await this.bucket.delete(name);
  }

  async list(): Promise<StoredBlob[]> {
    // A deleted object keeps a tombstone entry marked `deleted`.
    return (await this.bucket.list())
      .filter((info) => !info.deleted)
      .map((info) => ({ name: info.name, storedAtMs: Date.parse(info.mtime) }));
  }

  close(): void {}
}
