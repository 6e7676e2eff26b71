import { mkdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import type { SidecarClient } from "@shoal/sidecar-client";
import { SidecarError } from "@shoal/sidecar-client";
import { traceparentOf, type Logger } from "@shoal/telemetry";
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
  /** Each lookup gets an `adapter.ensure` span in its request's trace; a miss, its fetch and load. */
  readonly tracer: Tracer;
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
  async ensure(
    sidecar: SidecarClient,
    modelKey: string,
    ref: AdapterVersionRef,
    ctx: Context,
  ): Promise<string> {
    const name = `${ref.name}@${ref.version}`;
    const span = this.#o.tracer.startSpan(
      "adapter.ensure",
      { attributes: { "shoal.model": modelKey, "shoal.adapter": name } },
      ctx,
    );
    const loaded = this.#models(modelKey);
    if (loaded.has(name)) {
      loaded.delete(name);
      loaded.add(name);
      this.#o.metrics?.adapterLookup(modelKey, "hit");
      span.setAttribute("shoal.adapter_cache", "hit").end();
      return name;
    }
    this.#o.metrics?.adapterLookup(modelKey, "miss");
    const key = `${modelKey}/${name}`;
    let pending = this.#pending.get(key);
    // A request arriving while another loads the same adapter waits for that load: its span
    // says so, and the fetch and load spans are in the first request's trace.
    span.setAttribute("shoal.adapter_cache", pending === undefined ? "miss" : "joined");
    if (pending === undefined) {
      pending = this.#load(sidecar, modelKey, ref, name, trace.setSpan(ctx, span)).finally(() =>
        this.#pending.delete(key),
      );
      this.#pending.set(key, pending);
    }
    try {
      return await pending;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
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
    ctx: Context,
  ): Promise<string> {
    const dir = join(this.#o.dir, modelKey, ref.name, String(ref.version));
    if (!(await isDirectory(dir))) {
      await mkdir(dirname(dir), { recursive: true });
      const span = this.#o.tracer.startSpan("adapter.fetch", {}, ctx);
      try {
        await this.#o.source.fetch(modelKey, ref.name, ref.version, dir);
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        if (this.#o.source.isNotFound(err)) {
          throw new AdapterGoneError(`adapter ${name} is no longer published`, { cause: err });
        }
        throw err;
      } finally {
        span.end();
      }
    }
    try {
      const result = await sidecar.loadAdapter(modelKey, name, dir, {
        traceparent: traceparentOf(ctx),
      });
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
