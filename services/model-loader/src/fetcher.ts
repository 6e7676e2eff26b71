import type { ModelEntry } from "@shoal/config";
import {
  compileEnsureModelOptions,
  ensureModel,
  isModelSourceError,
  type EnsureModelOptions,
  type ModelProgressEvent,
} from "@shoal/model-sources";
import type { Logger } from "@shoal/telemetry";

/** Reasons worth trying the next source for; the rest would fail the same way anywhere. */
const TRY_NEXT = new Set(["not-found", "unauthorized", "transfer", "checksum", "invalid-source"]);

/**
 * Gets a model's files into the node's cache before any worker loads them, trying the catalog's
 * sources in order. `ensureModel` already verifies checksums, stages and renames with a
 * completion marker (a partial fetch never looks complete), and joins concurrent fetches of the
 * same model into one; this adds the fallback and forwards progress.
 */
export class ModelFetcher {
  readonly #options: EnsureModelOptions;
  readonly #logger: Logger;
  readonly #listeners = new Map<string, (event: ModelProgressEvent) => void>();

  constructor(options: EnsureModelOptions, logger: Logger) {
    this.#logger = logger;
    this.#options = {
      ...options,
      logger,
      onProgress: (event) => {
        this.#listeners.get(event.modelId)?.(event);
        options.onProgress?.(event);
      },
    };
  }

  /**
   * @param onProgress called as bytes arrive for this model.
   * @throws ModelSourceError from the last source tried.
   */
  async fetch(entry: ModelEntry, onProgress: (event: ModelProgressEvent) => void): Promise<string> {
    const sources = entry.sources ?? [entry.source];
    const compiled = compileEnsureModelOptions(this.#options);
    this.#listeners.set(entry.id, onProgress);
    try {
      for (let i = 0; ; i++) {
        const source = sources[i] ?? entry.source;
        try {
          return await ensureModel({ ...entry, source }, compiled);
        } catch (err) {
          const last = i >= sources.length - 1;
          if (last || !isModelSourceError(err) || !TRY_NEXT.has(err.reason)) throw err;
          this.#logger.warn(
            { err, model: entry.id, source: source.kind, next: sources[i + 1]?.kind },
            "model source failed; trying the next one",
          );
        }
      }
    } finally {
      this.#listeners.delete(entry.id);
    }
  }
}
