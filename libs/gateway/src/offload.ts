import type { Context } from "@opentelemetry/api";

/** Where an offloaded input now lives; travels in the work item instead of the bytes. */
export interface StoredBlob {
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
}

/**
 * Moves inputs too large for the queue into the blob store, and removes them once their
 * request is answered. Failures to store are `RequestError`s (UNAVAILABLE when the offloader
 * cannot be reached), so the client hears why and nothing is queued.
 */
export interface BlobOffload {
  /** Inputs larger than this many UTF-8 bytes are offloaded. */
  readonly thresholdBytes: number;
  put(bytes: Uint8Array, ctx: Context): Promise<StoredBlob>;
  /** Best effort: a blob that outlives this is removed by the offloader's TTL sweep. */
  remove(names: readonly string[]): void;
}
