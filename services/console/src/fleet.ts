import type { Catalog } from "@shoal/config";
import type { Heartbeat, ModelRecord, ReplicaRecord, ReplicaState } from "@shoal/residency";
import {
  MAX_EVENTS,
  type CopyView,
  type NodeView,
  type ResidencyEvent,
  type WorkerView,
} from "./snapshot.js";

/** A worker silent this long is marked stale; twelve times as long, forgotten. */
const STALE_MS = 5_000;
const FORGET_MS = 60_000;

interface ModelCounters {
  readonly items: number;
  readonly batches: number;
  readonly busyUs: number;
}

interface ModelRates {
  readonly itemsPerS: number;
  readonly busyFraction: number;
  readonly batchSize: number;
}

interface TrackedWorker {
  heartbeat: Heartbeat;
  at: number;
  counters: Map<string, ModelCounters>;
  rates: Map<string, ModelRates>;
}

/**
 * The fleet as its workers' heartbeats and the model-loaders' residency records describe it:
 * which copies each accelerator holds, how full and how busy it is, and the loads and
 * evictions as they happen. Pure state: the collector feeds it and reads it once a second.
 */
export class FleetState {
  readonly #catalog: Catalog;
  readonly #headroom: (capacityBytes: number) => number;
  readonly #workers = new Map<string, TrackedWorker>();
  /** `<model>/<worker>` → the loader's record and since when it has been known. */
  readonly #replicas = new Map<string, { record: ReplicaRecord; firstSeenAt: number }>();
  readonly #models = new Map<string, ModelRecord>();
  readonly #events: ResidencyEvent[] = [];

  /** @param headroom the memory the model-loader leaves free on an accelerator of a size. */
  constructor(catalog: Catalog, headroom: (capacityBytes: number) => number) {
    this.#catalog = catalog;
    this.#headroom = headroom;
  }

  heartbeat(hb: Heartbeat, atMs: number): void {
    const before = this.#workers.get(hb.worker);
    const counters = new Map(
      hb.models.map((m) => [
        m.model,
        { items: m.items, batches: m.batches ?? 0, busyUs: m.busyUs ?? 0 },
      ]),
    );
    const rates = new Map<string, ModelRates>();
    const seconds = before === undefined ? 0 : (atMs - before.at) / 1000;
    if (before !== undefined && seconds > 0) {
      for (const [model, now] of counters) {
        const then = before.counters.get(model);
        // A model reloaded since (its counters restarted) has no rate until the next beat.
        if (then === undefined || now.items < then.items || now.busyUs < then.busyUs) continue;
        const batches = now.batches - then.batches;
        rates.set(model, {
          itemsPerS: (now.items - then.items) / seconds,
          busyFraction: Math.min(1, (now.busyUs - then.busyUs) / 1e6 / seconds),
          batchSize: batches > 0 ? (now.items - then.items) / batches : 0,
        });
      }
    }
    this.#workers.set(hb.worker, { heartbeat: hb, at: atMs, counters, rates });
  }

  /** A replica record written (or first read) in the residency bucket. */
  replica(record: ReplicaRecord, atMs: number): void {
    const key = `${record.model}/${record.worker}`;
    const before = this.#replicas.get(key);
    if (before?.record.state === record.state) {
      this.#replicas.set(key, { record, firstSeenAt: before.firstSeenAt });
      return;
    }
    this.#replicas.set(key, { record, firstSeenAt: before?.firstSeenAt ?? atMs });
    const loadedAfter =
      record.state === "resident" && before?.record.state === "loading"
        ? Math.max(0, record.sinceUnixMs - before.record.sinceUnixMs)
        : undefined;
    this.#event(record, record.state, atMs, loadedAfter);
  }

  /** A replica record deleted: the copy was unloaded, or its worker went away. */
  replicaGone(model: string, worker: string, atMs: number): void {
    const key = `${model}/${worker}`;
    const before = this.#replicas.get(key);
    if (before === undefined) return;
    this.#replicas.delete(key);
    this.#event(before.record, "gone", atMs, Math.max(0, atMs - before.record.sinceUnixMs));
  }

  modelRecord(record: ModelRecord): void {
    this.#models.set(record.model, record);
  }

  modelRecordGone(model: string): void {
    this.#models.delete(model);
  }

  /** Forgets workers silent for a minute (their copies stay while the bucket lists them). */
  expire(nowMs: number): void {
    for (const [id, w] of this.#workers) if (nowMs - w.at > FORGET_MS) this.#workers.delete(id);
  }

  /** Newest first. */
  events(): readonly ResidencyEvent[] {
    return this.#events;
  }

  modelRecordOf(model: string): ModelRecord | undefined {
    return this.#models.get(model);
  }

  /** Every copy of `model` the residency bucket lists. */
  copiesOf(model: string): { worker: string; node: string; state: ReplicaState }[] {
    return [...this.#replicas.values()]
      .map((r) => r.record)
      .filter((r) => r.model === model)
      .map((r) => ({ worker: r.worker, node: r.node, state: r.state }));
  }

  /** Items a second the workers computed for `model` over their last heartbeat interval. */
  completionsPerS(model: string): number {
    let sum = 0;
    for (const w of this.#workers.values()) sum += w.rates.get(model)?.itemsPerS ?? 0;
    return sum;
  }

  /** Items of `model` its workers handed back unrun, as their last heartbeats count them. */
  putBacks(model: string): number {
    let sum = 0;
    for (const w of this.#workers.values()) {
      sum += w.heartbeat.models.find((m) => m.model === model)?.putBacks ?? 0;
    }
    return sum;
  }

  nodes(nowMs: number): NodeView[] {
    const byNode = new Map<string, WorkerView[]>();
    for (const w of this.#workers.values()) {
      const view = this.#workerView(w, nowMs);
      byNode.set(view.node, [...(byNode.get(view.node) ?? []), view]);
    }
    return [...byNode]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([node, workers]) => ({
        node,
        workers: workers.sort((a, b) => a.worker.localeCompare(b.worker)),
      }));
  }

  #workerView(w: TrackedWorker, nowMs: number): WorkerView {
    const hb = w.heartbeat;
    const fromHeartbeat = new Map(hb.models.map((m) => [m.model, m]));
    const recorded = [...this.#replicas.values()]
      .map((r) => r.record)
      .filter((r) => r.worker === hb.worker);
    // The loader's record says a copy is loading before the worker's heartbeat does; the
    // heartbeat lists copies of unmanaged workers that no record names.
    const models = new Set([...recorded.map((r) => r.model), ...fromHeartbeat.keys()]);
    const copies: CopyView[] = [...models].sort().map((model) => {
      const record = recorded.find((r) => r.model === model);
      const beat = fromHeartbeat.get(model);
      const rates = w.rates.get(model);
      const entry = this.#catalog.byKey(model);
      const state = record?.state ?? beat?.state ?? "loading";
      return {
        model,
        id: entry?.id ?? model,
        state,
        memoryBytes:
          beat !== undefined && beat.memoryBytes > 0
            ? beat.memoryBytes
            : (record?.memoryBytes ?? 0),
        pinned: entry?.pinned ?? false,
        busyFraction: rates?.busyFraction ?? 0,
        batchSize: rates?.batchSize ?? 0,
        since: record?.sinceUnixMs ?? w.at,
      };
    });
    return {
      worker: hb.worker,
      node: hb.node,
      capacityBytes: hb.capacityBytes,
      headroomBytes: Math.min(hb.capacityBytes, this.#headroom(hb.capacityBytes)),
      usedBytes: copies.reduce((n, c) => n + c.memoryBytes, 0),
      lastSeenAt: w.at,
      stale: nowMs - w.at > STALE_MS,
      busyFraction: Math.min(
        1,
        copies.reduce((n, c) => n + c.busyFraction, 0),
      ),
      batchSize: Math.max(0, ...copies.map((c) => c.batchSize)),
      copies,
    };
  }

  #event(
    record: ReplicaRecord,
    kind: ResidencyEvent["kind"],
    atMs: number,
    durationMs: number | undefined,
  ): void {
    this.#events.unshift({
      at: atMs,
      model: record.model,
      id: this.#catalog.byKey(record.model)?.id ?? record.model,
      worker: record.worker,
      node: record.node,
      kind,
      ...(durationMs === undefined ? {} : { durationMs }),
    });
    this.#events.length = Math.min(this.#events.length, MAX_EVENTS);
  }
}
