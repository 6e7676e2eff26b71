import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { AdapterConflictError } from "./store-errors.js";
import { decodeRecord, encodeRecord, type AdapterRecord } from "./store-records.js";

/** An index entry with the revision a compare-and-set must name. */
export interface IndexEntry {
  readonly record: AdapterRecord;
  readonly revision: number;
}

/** What a mutation wants done with the entry it was shown. */
export type IndexChange =
  | { readonly put: AdapterRecord }
  | { readonly delete: true }
  | { readonly keep: true };

/**
 * The adapter index in the KV bucket, changed only by compare-and-set: every mutation reads
 * the entry, decides, and writes naming the revision it read; when another writer got there
 * first the write fails and the mutation runs again on what that writer left.
 */
export class AdapterIndex {
  readonly #kv: KV;
  readonly #maxAttempts: number;

  constructor(kv: KV, maxAttempts: number) {
    this.#kv = kv;
    this.#maxAttempts = maxAttempts;
  }

  get kv(): KV {
    return this.#kv;
  }

  /** The live entry under `key`, reservations (no versions yet) included. */
  async read(key: string): Promise<IndexEntry | undefined> {
    const entry = await this.#kv.get(key);
    if (entry === null || entry.operation !== "PUT") return undefined;
    return { record: decodeRecord(entry.value), revision: entry.revision };
  }

  /**
   * Runs `decide` on the current entry until its outcome is written without a conflict.
   * `decide` may throw to abort (an ownership or not-found error), and must be pure: it runs
   * once per attempt.
   *
   * @returns what was decided on the attempt that was written.
   * @throws AdapterConflictError after `maxAttempts` conflicts in a row.
   */
  async mutate(
    key: string,
    decide: (current: AdapterRecord | undefined) => IndexChange,
  ): Promise<{ readonly before: AdapterRecord | undefined; readonly change: IndexChange }> {
    for (let attempt = 0; attempt < this.#maxAttempts; attempt++) {
      const current = await this.read(key);
      const change = decide(current?.record);
      try {
        if ("put" in change) {
          if (current === undefined) await this.#kv.create(key, encodeRecord(change.put));
          else await this.#kv.update(key, encodeRecord(change.put), current.revision);
        } else if ("delete" in change && current !== undefined) {
          await this.#kv.delete(key, { previousSeq: current.revision });
        }
        return { before: current?.record, change };
      } catch (error) {
        if (!isConflict(error)) throw error;
        // Another writer changed the entry between our read and write: read again.
      }
    }
    throw new AdapterConflictError(
      `adapter ${key} changed ${this.#maxAttempts} times while being updated; retry`,
    );
  }
}

function isConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
