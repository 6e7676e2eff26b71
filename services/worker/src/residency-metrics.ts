import { Counter, Histogram, type Registry } from "prom-client";

/** A cold load: seconds to minutes, the fetch of the model's files included. */
const LOAD_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** How a model load the model-loader asked for ended. */
export type LoadOutcome = "ok" | "oom" | "failed";

/**
 * What this worker holds and what it cost to get it there: model loads and unloads, and the
 * LoRA adapter cache. Labels are catalog model keys.
 */
export class ResidencyMetrics {
  readonly #loads: Counter<"model" | "outcome">;
  readonly #loadSeconds: Histogram<"model">;
  readonly #unloads: Counter<"model">;
  readonly #adapterLookups: Counter<"model" | "result">;
  readonly #adapterEvictions: Counter<"model">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#loads = new Counter({
      name: "shoal_worker_model_loads_total",
      help: "Model loads asked of this worker, by outcome (ok, oom, failed).",
      labelNames: ["model", "outcome"],
      registers,
    });
    this.#loadSeconds = new Histogram({
      name: "shoal_worker_model_load_seconds",
      help: "Successful model loads, from the request to pulling work: fetching files and the sidecar's load.",
      labelNames: ["model"],
      buckets: LOAD_BUCKETS,
      registers,
    });
    this.#unloads = new Counter({
      name: "shoal_worker_model_unloads_total",
      help: "Models this worker unloaded (evicted) when the model-loader asked.",
      labelNames: ["model"],
      registers,
    });
    this.#adapterLookups = new Counter({
      name: "shoal_worker_adapter_lookups_total",
      help: "Generation requests naming a LoRA adapter: hit (already on the sidecar) or miss (fetched and loaded).",
      labelNames: ["model", "result"],
      registers,
    });
    this.#adapterEvictions = new Counter({
      name: "shoal_worker_adapter_evictions_total",
      help: "LoRA adapters unloaded to keep a model's adapters within the cap.",
      labelNames: ["model"],
      registers,
    });
  }

  loaded(model: string, outcome: LoadOutcome, seconds: number): void {
    this.#loads.inc({ model, outcome });
    if (outcome === "ok") this.#loadSeconds.observe({ model }, seconds);
  }

  unloaded(model: string): void {
    this.#unloads.inc({ model });
  }

  adapterLookup(model: string, result: "hit" | "miss"): void {
    this.#adapterLookups.inc({ model, result });
  }

  adapterEvicted(model: string): void {
    this.#adapterEvictions.inc({ model });
  }
}
