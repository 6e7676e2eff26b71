import {
  formatAdapterReference,
  type AdapterIndexChange,
  type AdapterRecord,
  type AdapterStore,
  type AdapterWatch,
} from "@shoal/adapters";
import type { Logger } from "@shoal/telemetry";
import type { AdapterResolver, ListedAdapter, ResolvedAdapter } from "./adapter-resolver.js";

/**
 * The adapter registry's index as this ingress sees it: a copy kept current by a watch of the
 * index, so resolving `base:name@version` is a map lookup on the request path. An adapter
 * published a moment ago may be unknown here for as long as the watch takes to deliver it.
 */
export class PublishedAdapters implements AdapterResolver {
  readonly #records = new Map<string, AdapterRecord>();
  readonly #watch: AdapterWatch;
  readonly #following: Promise<void>;

  private constructor(watch: AdapterWatch, logger: Logger) {
    this.#watch = watch;
    this.#following = (async () => {
      try {
        for await (const change of watch) this.#apply(change);
      } catch (err) {
        logger.error({ err }, "adapter index watch ended; adapters resolve as last seen");
      }
    })();
  }

  /** Starts following `store`'s index. */
  static async follow(store: AdapterStore, logger: Logger): Promise<PublishedAdapters> {
    return new PublishedAdapters(await store.watch(), logger);
  }

  resolve(baseKey: string, name: string, version?: number): ResolvedAdapter | undefined {
    const record = this.#records.get(key(baseKey, name));
    const versions = record?.versions ?? [];
    const chosen =
      version === undefined
        ? versions[versions.length - 1]?.version
        : versions.find((v) => v.version === version)?.version;
    if (record === undefined || chosen === undefined) return undefined;
    return { version: chosen, owner: record.owner, sharedWith: record.sharedWith };
  }

  list(): ListedAdapter[] {
    return [...this.#records.values()]
      .filter((r) => r.versions.length > 0)
      .map((r) => ({
        model: formatAdapterReference(r.base, { name: r.name }),
        base: r.base,
        owner: r.owner,
        sharedWith: r.sharedWith,
        latestVersion: r.versions[r.versions.length - 1]?.version ?? 0,
        created: Math.floor(Date.parse(r.versions[0]?.createdAt ?? r.createdAt) / 1000),
      }))
      .sort((a, b) => a.model.localeCompare(b.model));
  }

  async stop(): Promise<void> {
    this.#watch.stop();
    await this.#following;
  }

  #apply(change: AdapterIndexChange): void {
    if (change.kind === "put") this.#records.set(key(change.baseKey, change.name), change.record);
    else this.#records.delete(key(change.baseKey, change.name));
  }
}

function key(baseKey: string, name: string): string {
  return `${baseKey}.${name}`;
}
