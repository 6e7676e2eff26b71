import type { KvWatchEntry } from "@nats-io/kv";
import type { QueuedIterator } from "@nats-io/transport-node";
import { decodeRecord, parseAdapterIndexKey, type AdapterRecord } from "./store-records.js";

/** A change to the adapter index, as a cache of it applies it. */
export type AdapterIndexChange =
  | {
      readonly kind: "put";
      readonly baseKey: string;
      readonly name: string;
      readonly record: AdapterRecord;
    }
  | { readonly kind: "delete"; readonly baseKey: string; readonly name: string };

/** Changes to the index: every adapter's current record first, then each change as it happens. */
export interface AdapterWatch extends AsyncIterable<AdapterIndexChange> {
  /** Ends the iteration. */
  stop(): void;
}

/**
 * Turns KV watch entries into index changes. A record with no versions (a first upload still
 * in flight) is reported as a delete: it names nothing a request can use yet. An entry that
 * cannot be decoded is passed to `onInvalid` and skipped, so one bad entry cannot end a
 * cache's watch.
 */
export function adapterWatch(
  entries: QueuedIterator<KvWatchEntry>,
  onInvalid: (key: string, error: unknown) => void,
): AdapterWatch {
  async function* changes(): AsyncGenerator<AdapterIndexChange> {
    for await (const entry of entries) {
      const id = parseAdapterIndexKey(entry.key);
      if (id === undefined) continue;
      if (entry.operation !== "PUT") {
        yield { kind: "delete", ...id };
        continue;
      }
      let record: AdapterRecord;
      try {
        record = decodeRecord(entry.value);
      } catch (error) {
        onInvalid(entry.key, error);
        continue;
      }
      yield record.versions.length === 0
        ? { kind: "delete", ...id }
        : { kind: "put", ...id, record };
    }
  }
  const iterator = changes();
  return {
    [Symbol.asyncIterator]: () => iterator,
    stop: () => {
      entries.stop();
    },
  };
}
