import { mkdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { SidecarClient } from "@shoal/sidecar-client";
import { SidecarError } from "@shoal/sidecar-client";
import type { Logger } from "@shoal/telemetry";
import type { ResidencyMetrics } from "./residency-metrics.js";

/** An adapter version as a work item names it. */
export interface AdapterVersionRef {
  readonly name: string;
  readonly version: number;
}

/** Where adapter files come from: the registry's store (`@shoal/adapters`). */
export interface AdapterSource {
  /**
   * Writes the adapter's `adapter_config.json` and `adapter_model.safetensors` into `dir`,
   * checked against their recorded digests; fails with `notFound` set when the version is no
   * longer published.
   */
  fetch(baseKey: string, name: string, version: number, dir: string): Promise<unknown>;
  /** Whether `err` from {@link fetch} says the version does not exist. */
  isNotFound(err: unknown): boolean;
}

export interface AdapterCacheOptions {
  readonly source: AdapterSource;
  /** Where fetched adapters are kept on disk, one directory per version. */
  readonly dir: string;
  /**
   * Adapters kept loaded on the sidecar per model; past it the least recently used one is
   * unloaded. Adapters are small next to their model, but not free.
   * @default 16
   */
  readonly maxLoadedPerModel?: number;
  /** Hits, misses and evictions are counted here; none recorded without. */
  readonly metrics?: ResidencyMetrics | undefined;
  readonly logger: Logger;
}

/** The adapter named in a work item no longer exists in the registry. */
export class AdapterGoneError extends Error {
  override readonly name = "AdapterGoneError";
}

/**
 * The LoRA adapters a worker's sidecar holds, per model: fetched from the registry on first
 * use, loaded under `<name>@<version>`, kept while used and unloaded least recently used first.
 * Concurrent requests for one adapter share one fetch and one load.
 */
export class AdapterCache {
  readonly #o: AdapterCacheOptions;
  readonly #max: number;
  /** Per model key: the sidecar adapter names loaded, least recently used first. */
  readonly #loaded = new Map<string, Set<string>>();
  readonly #pending = new Map<string, Promise<string>>();

  constructor(options: AdapterCacheOptions) {
    this.#o = options;
    this.#max = options.maxLoadedPerModel ?? 16;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1) {
      throw new RangeError("adapter cache: maxLoadedPerModel must be an integer ≥ 1");
    }
  }

  /**
   * The name under which `ref` is loaded for model `modelKey` on `sidecar`, loading it first
   * when needed.
   *
   * @throws AdapterGoneError when the registry no longer has the version.
   */
  async ensure(sidecar: SidecarClient, modelKey: string, ref: AdapterVersionRef): Promise<string> {
    const name = `${ref.name}@${ref.version}`;
    const loaded = this.#models(modelKey);
    if (loaded.has(name)) {
      loaded.delete(name);
      loaded.add(name);
      this.#o.metrics?.adapterLookup(modelKey, "hit");
      return name;
    }
    this.#o.metrics?.adapterLookup(modelKey, "miss");
    const key = `${modelKey}/${name}`;
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = this.#load(sidecar, modelKey, ref, name).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    return pending;
  }

  /**
   * Forgets what this cache believes `modelKey`'s sidecar holds: after the sidecar restarted,
   * or answered that an adapter it was thought to hold is unknown.
   */
  forget(modelKey: string, adapter?: string): void {
    if (adapter === undefined) this.#loaded.delete(modelKey);
    else this.#loaded.get(modelKey)?.delete(adapter);
  }

  async #load(
    sidecar: SidecarClient,
    modelKey: string,
    ref: AdapterVersionRef,
    name: string,
  ): Promise<string> {
    const dir = join(this.#o.dir, modelKey, ref.name, String(ref.version));
    if (!(await isDirectory(dir))) {
      await mkdir(dirname(dir), { recursive: true });
      try {
        await this.#o.source.fetch(modelKey, ref.name, ref.version, dir);
      } catch (err) {
        if (this.#o.source.isNotFound(err)) {
          throw new AdapterGoneError(`adapter ${name} is no longer published`, { cause: err });
        }
        throw err;
      }
    }
    try {
      const result = await sidecar.loadAdapter(modelKey, name, dir);
      this.#o.logger.info(
        { model: modelKey, adapter: name, rank: result.rank, load_us: result.loadUs },
        "adapter loaded",
      );
    } catch (err) {
      // Another load of it finished first (after a forget): it is there all the same.
      if (!(err instanceof SidecarError && err.code === "adapter_exists")) {
        // A directory the sidecar refuses is not kept to be refused again.
        if (err instanceof SidecarError && err.code === "load_failed") {
          await rm(dir, { recursive: true, force: true });
        }
        throw err;
      }
    }
    const loaded = this.#models(modelKey);
    loaded.add(name);
    await this.#evict(sidecar, modelKey, loaded);
    return name;
  }

  /** Unloads the least recently used adapters of a model above the cap. */
  async #evict(sidecar: SidecarClient, modelKey: string, loaded: Set<string>) {
    while (loaded.size > this.#max) {
      const [oldest] = loaded;
      if (oldest === undefined) return;
      loaded.delete(oldest);
      this.#o.metrics?.adapterEvicted(modelKey);
      // Sequences already running with it finish with it; an adapter the sidecar no longer
      // has (it restarted) needs no unloading.
      await sidecar.unloadAdapter(modelKey, oldest).catch((err: unknown) => {
        if (!(err instanceof SidecarError && err.code === "adapter_not_found")) {
          this.#o.logger.warn({ err, model: modelKey, adapter: oldest }, "adapter unload failed");
        }
      });
    }
  }

  #models(modelKey: string): Set<string> {
    let loaded = this.#loaded.get(modelKey);
    if (loaded === undefined) {
      loaded = new Set();
      this.#loaded.set(modelKey, loaded);
    }
    return loaded;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
