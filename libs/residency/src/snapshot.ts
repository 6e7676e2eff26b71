/**
 * What the policy sees of one node at one instant. The model-loader builds it from the
 * catalog, the workers' heartbeats (the sidecars' real `memory_bytes`) and the work consumers;
 * the policy itself reads no clock and does no I/O, so every decision is reproducible in a test.
 */
export interface ResidencySnapshot {
  /** Milliseconds on any monotonic clock; the `*At`/`since` fields below use the same one. */
  readonly nowMs: number;
  readonly models: readonly ModelDemand[];
  readonly workers: readonly WorkerMemory[];
}

/** One catalog model and the work waiting for it. */
export interface ModelDemand {
  /** The catalog key. */
  readonly model: string;
  readonly pinned: boolean;
  /**
   * Copies of a pinned model the node keeps resident whatever the demand, as the model's
   * tuned `replicas` says; 1 when unset. Unpinned models follow demand alone.
   */
  readonly copies?: number;
  /**
   * Size it will take once loaded: the real figure from the last load when known, else the
   * catalog's estimate.
   */
  readonly bytes: number;
  /** How long a load of it took last time (or an estimate), ms. */
  readonly loadMs: number;
  /** Items queued for it and not yet acked (the work consumer's pending + ack pending). */
  readonly pending: number;
  /** Recent arrival rate, items per second. */
  readonly ratePerS: number;
  /** Last time it had work queued or being served; undefined when never. */
  readonly lastDemandAt: number | undefined;
  /** Since when it has had pending work and no copy anywhere; undefined when it has one. */
  readonly waitingSince: number | undefined;
  /**
   * Not to be placed now: the last load failed (bad weights, a second out-of-memory) and its
   * cooldown has not passed. Its copies, if any, are left alone.
   */
  readonly blocked: boolean;
  /**
   * With `spareCopies`: the copies its share of the node's memory by demand is worth
   * (`memoryShares` in shares.ts, and at least what its queue asks for), held at its highest for
   * `spareWindowMs` by the loader. Spare copies fill towards it and go above it.
   */
  readonly shareCopies?: number;
}

export type ReplicaState = "loading" | "resident" | "evicting";

/** One worker (one accelerator) and what it holds. */
export interface WorkerMemory {
  readonly worker: string;
  /** Memory of its accelerator, bytes. */
  readonly capacityBytes: number;
  readonly replicas: readonly Replica[];
}

/** A model on a worker, in whatever state of its life. */
export interface Replica {
  readonly model: string;
  readonly state: ReplicaState;
  /** Real `memory_bytes` once resident; the expected size while loading. */
  readonly bytes: number;
  /** When it entered this state. */
  readonly since: number;
}
