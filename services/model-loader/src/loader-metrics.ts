import { Counter, Gauge, type Registry } from "prom-client";

/** How a load the loader started ended. */
export type LoaderLoadOutcome =
  | "ok"
  | "oom"
  | "failed"
  | "fetch_failed"
  | "worker_unreachable"
  | "worker_busy";

/** Why the loader unloaded a copy: to make room for another model, or an idle extra copy. */
export type LoaderUnloadReason = "evicted" | "idle_copy" | "over_share";

/** What the loader's state is, read when scraped. */
export interface LoaderState {
  /** Resident copies per model key. */
  copies(): ReadonlyMap<string, number>;
  /** Model keys left alone for now after a failed load or no room anywhere. */
  blocked(): readonly string[];
  /** Workers sending heartbeats. */
  workers(): number;
}

/**
 * The model-loader's decisions and their outcomes, by catalog model key: loads by outcome,
 * unloads by reason, placement rounds, and (read when scraped) copies, blocked models and
 * workers.
 */
export class LoaderMetrics {
  readonly #loads: Counter<"model" | "reason" | "outcome">;
  readonly #unloads: Counter<"model" | "reason">;
  readonly #rounds: Counter<"outcome">;

  constructor(registry: Registry, state: LoaderState) {
    const registers = [registry];
    this.#loads = new Counter({
      name: "shoal_loader_loads_total",
      help: "Loads the loader started, by why (pinned, demand, replicate) and how they ended.",
      labelNames: ["model", "reason", "outcome"],
      registers,
    });
    this.#unloads = new Counter({
      name: "shoal_loader_unloads_total",
      help: "Copies the loader unloaded, by why (evicted to make room, idle_copy, over_share).",
      labelNames: ["model", "reason"],
      registers,
    });
    this.#rounds = new Counter({
      name: "shoal_loader_placement_rounds_total",
      help: "Placement rounds (measure demand, plan, start actions), by outcome (ok, failed).",
      labelNames: ["outcome"],
      registers,
    });
    new Gauge({
      name: "shoal_loader_resident_copies",
      help: "Resident copies of each model across this node's workers.",
      labelNames: ["model"],
      registers,
      collect() {
        this.reset();
        for (const [model, n] of state.copies()) this.set({ model }, n);
      },
    });
    new Gauge({
      name: "shoal_loader_blocked_models",
      help: "1 for a model left alone after a failed load or finding no room, until its cooldown ends.",
      labelNames: ["model"],
      registers,
      collect() {
        this.reset();
        for (const model of state.blocked()) this.set({ model }, 1);
      },
    });
    new Gauge({
      name: "shoal_loader_workers",
      help: "Workers of this node sending heartbeats.",
      registers,
      collect() {
        this.set(state.workers());
      },
    });
  }

  loaded(model: string, reason: string, outcome: LoaderLoadOutcome): void {
    this.#loads.inc({ model, reason, outcome });
  }

  unloaded(model: string, reason: LoaderUnloadReason): void {
    this.#unloads.inc({ model, reason });
  }

  round(outcome: "ok" | "failed"): void {
    this.#rounds.inc({ outcome });
  }
}
