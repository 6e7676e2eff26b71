/**
 * Where blobs live while their request waits. The offloader writes and deletes them, workers
 * read them, the sweeper lists them by age. Two backends: the JetStream Object Store (the
 * default: nothing to run beside NATS) and any S3-compatible store (for blobs larger or more
 * numerous than the NATS cluster's disks should hold).
 */
export interface BlobStore {
  /** Names the backend in logs: `nats:SHOAL_BLOBS`, `s3:<bucket>/<prefix>`. */
  readonly description: string;
  /**
   * Stores exactly `size` bytes read from `body` under `name`. When `body` errors the store
   * keeps nothing under that name and the promise rejects.
   */
  put(name: string, size: number, body: ReadableStream<Uint8Array>): Promise<void>;
  /** The blob's bytes, or null when there is none by that name. */
  get(name: string): Promise<Uint8Array | null>;
  /** Deletes the blob; deleting one that is not there succeeds. */
  delete(name: string): Promise<void>;
  /** Every blob, with when it was stored. */
  list(): Promise<StoredBlob[]>;
  /** Releases connections the store holds (not the NATS connection it was given). */
  close(): void;
}

export interface StoredBlob {
  readonly name: string;
  /** When it was stored, ms since the epoch (S3 keeps whole seconds). */
  readonly storedAtMs: number;
}
