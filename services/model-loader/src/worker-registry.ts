import type { Heartbeat, Replica, ReplicaState, WorkerMemory } from "@shoal/residency";

/** One copy of a model on a worker, as the loader tracks it. */
export interface TrackedReplica {
  state: ReplicaState;
  bytes: number;
  /** Monotonic ms when it entered `state`. */
  since: number;
  /** Wall-clock ms of the same moment, for the KV record. */
  sinceUnixMs: number;
  /** The sidecar's item counter for it, from the last heartbeat. */
  items: number;
}

export interface TrackedWorker {
  readonly worker: string;
  capacityBytes: number;
  lastHeartbeatAt: number;
  /** A load or unload the loader started is under way here. */
  busy: boolean;
  /** When the last load or unload the loader made here finished (monotonic ms). */
  settledAt: number;
  readonly replicas: Map<string, TrackedReplica>;
}

/** What changed for the KV when a heartbeat or a timeout was applied. */
export interface RegistryChange {
  readonly upserted: readonly { worker: string; model: string }[];
  readonly removed: readonly { worker: string; model: string }[];
}

/**
 * The workers of this node, as heartbeats and the loader's own actions describe them. The
 * loader's record wins for a worker with an action under way or just finished (a heartbeat in
 * flight may predate it); otherwise the worker's heartbeat is the truth, which is how a copy
 * lost in a sidecar crash, or loaded before this loader restarted, is noticed.
 */
export class WorkerRegistry {
  readonly #workers = new Map<string, TrackedWorker>();
  readonly #staleMs: number;
  readonly #settleMs: number;

  /**
   * @param staleMs a worker silent this long is gone, and so are its copies.
   * @param settleMs how long after an action the worker's heartbeats are trusted again.
   */
  constructor(staleMs: number, settleMs: number) {
    this.#staleMs = staleMs;
    this.#settleMs = settleMs;
  }

  get(worker: string): TrackedWorker | undefined {
    return this.#workers.get(worker);
  }

  all(): TrackedWorker[] {
    return [...this.#workers.values()];
  }

  /** Served items per model summed over workers, for the demand meter. */
  itemsByModel(): Map<string, number> {
    const items = new Map<string, number>();
    for (const w of this.#workers.values()) {
      for (const [model, r] of w.replicas) items.set(model, (items.get(model) ?? 0) + r.items);
    }
    return items;
  }

  heartbeat(hb: Heartbeat, nowMs: number, nowUnixMs: number): RegistryChange {
    let w = this.#workers.get(hb.worker);
    if (w === undefined) {
      w = {
        worker: hb.worker,
        capacityBytes: hb.capacityBytes,
        lastHeartbeatAt: nowMs,
        busy: false,
        settledAt: Number.NEGATIVE_INFINITY,
        replicas: new Map(),
      };
      this.#workers.set(hb.worker, w);
    }
    w.capacityBytes = hb.capacityBytes;
    w.lastHeartbeatAt = nowMs;
    const upserted: { worker: string; model: string }[] = [];
    const removed: { worker: string; model: string }[] = [];
    const trusted = !w.busy && nowMs - w.settledAt >= this.#settleMs;
    const reported = new Map(hb.models.map((m) => [m.model, m]));
    for (const [model, r] of w.replicas) {
      const seen = reported.get(model);
      if (seen !== undefined) {
        r.items = seen.items;
        if (r.state === "resident" && seen.state === "resident" && seen.memoryBytes > 0) {
          r.bytes = seen.memoryBytes;
        }
      } else if (trusted) {
        w.replicas.delete(model);
        removed.push({ worker: w.worker, model });
      }
    }
    if (trusted) {
      for (const m of hb.models) {
        if (m.state !== "resident" || w.replicas.has(m.model)) continue;
        w.replicas.set(m.model, {
          state: "resident",
          bytes: m.memoryBytes,
          since: nowMs,
          sinceUnixMs: nowUnixMs,
          items: m.items,
        });
        upserted.push({ worker: w.worker, model: m.model });
      }
    }
    return { upserted, removed };
  }

  /** Forgets workers whose heartbeats stopped; returns the copies that went with them. */
  expire(nowMs: number): RegistryChange {
    const removed: { worker: string; model: string }[] = [];
    for (const w of this.#workers.values()) {
      if (nowMs - w.lastHeartbeatAt < this.#staleMs) continue;
      this.#workers.delete(w.worker);
      for (const model of w.replicas.keys()) removed.push({ worker: w.worker, model });
    }
    return { upserted: [], removed };
  }

  /** The policy's view of the workers. */
  memory(): WorkerMemory[] {
    return this.all().map((w) => ({
      worker: w.worker,
      capacityBytes: w.capacityBytes,
      replicas: [...w.replicas].map(
        ([model, r]): Replica => ({ model, state: r.state, bytes: r.bytes, since: r.since }),
      ),
    }));
  }
}
