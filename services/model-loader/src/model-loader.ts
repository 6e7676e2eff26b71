import type { JetStreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import type { Catalog, ModelEntry } from "@shoal/config";
import { WORK_PREFIX } from "@shoal/jetstream";
import {
  ChurnCounter,
  controlSubject,
  decodeControlReply,
  encodeControl,
  LoadFailures,
  memoryShares,
  planResidency,
  Recommendations,
  usableBytes,
  type ChurnReport,
  type CompiledResidencyPolicyOptions,
  type ControlReply,
  type ModelDemand,
  type ModelState,
  type ResidencyAction,
  type WorkerMemory,
} from "@shoal/residency";
import { injectContext, natsHeaderCarrier, type Logger } from "@shoal/telemetry";
import { DemandMeter } from "./demand-meter.js";
import type { LoaderLoadOutcome, LoaderMetrics, LoaderUnloadReason } from "./loader-metrics.js";
import type { ModelFetcher } from "./fetcher.js";
import type { ResidencyKv } from "./residency-kv.js";
import type { WorkerRegistry } from "./worker-registry.js";

export interface ModelLoaderDeps {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly catalog: Catalog;
  readonly registry: WorkerRegistry;
  readonly kv: ResidencyKv;
  readonly fetcher: ModelFetcher;
  readonly policy: CompiledResidencyPolicyOptions;
  /** How long a model whose load failed is left alone before it is tried again. */
  readonly failureCooldownMs: number;
  /** Longest a worker may take to answer a `load` (fetching excluded). */
  readonly controlTimeoutMs: number;
  /** Decisions and outcomes are counted here; none recorded without. */
  readonly metrics?: LoaderMetrics | undefined;
  readonly logger: Logger;
  /**
   * Each load and unload is a trace of its own (fetch, evictions, the worker's load and the
   * sidecar's); the requests that waited for a load link to it.
   */
  readonly tracer: Tracer;
}

/** A model's standing as the API reports it. */
export interface ModelStatus {
  readonly state: ModelState | "cold";
  readonly message?: string;
  readonly bytesDone?: number;
  readonly bytesTotal?: number;
}

/** Bytes assumed for a model the catalog gives no size for, until a load measures it. */
const UNKNOWN_MODEL_BYTES = 512 * 1024 ** 2;
/** Load time assumed before one is measured. */
const UNKNOWN_LOAD_MS = 2000;

/** The metric's name for each reason the policy unloads a copy. */
const UNLOAD_REASONS = { "idle-copy": "idle_copy", "over-share": "over_share" } as const;

/** How long a want counts as pending work: a client's retries are seconds apart. */
const WANT_MS = 30_000;

/**
 * One node's placement loop: samples demand and the workers' memory, asks the policy what to
 * do, carries its actions out (fetch → evict → load, or unload), and publishes the result.
 * Actions on different workers run concurrently; each worker has at most one at a time.
 */
export class ModelLoader {
  readonly #d: ModelLoaderDeps;
  readonly #meter = new DemandMeter();
  readonly #shareWindow = new Recommendations();
  readonly #failures = new LoadFailures();
  readonly #churn = new ChurnCounter();
  /** Sizes and load times measured by sidecars, by model key: they replace catalog estimates. */
  readonly #learnedBytes = new Map<string, number>();
  readonly #learnedLoadMs = new Map<string, number>();
  readonly #blockedUntil = new Map<string, number>();
  readonly #waitingSince = new Map<string, number>();
  readonly #status = new Map<string, ModelStatus>();
  readonly #actions = new Set<Promise<void>>();
  /** Demand from refused no-wait requests, by model key: counted as pending until then. */
  readonly #wantedUntil = new Map<string, number>();

  constructor(deps: ModelLoaderDeps) {
    this.#d = deps;
  }

  churn(): ChurnReport {
    return this.#churn.report(performance.now());
  }

  /** How long the last load of `model` took on its sidecar, ms; undefined before one. */
  measuredLoadMs(model: string): number | undefined {
    return this.#learnedLoadMs.get(model);
  }

  status(model: string): ModelStatus {
    return this.#status.get(model) ?? { state: "cold" };
  }

  /**
   * Records that a client wants `model` without having queued work for it (ingress refused a
   * no-wait request while no copy was resident): for {@link WANT_MS} it counts as one pending
   * item, so the model is loaded as queued work would have it loaded, and kept while the
   * client retries. Unknown keys are ignored.
   */
  want(model: string, now = performance.now()): void {
    if (this.#d.catalog.byKey(model) !== undefined) this.#wantedUntil.set(model, now + WANT_MS);
  }

  /** Waits for the actions under way, for shutdown. */
  async settle(): Promise<void> {
    await Promise.all(this.#actions);
  }

  /** One round: measure, plan, start the actions. Never throws; a failed round is logged. */
  async tick(): Promise<void> {
    const now = performance.now();
    try {
      for (const r of this.#d.registry.expire(now).removed) {
        this.#d.logger.warn(r, "worker stopped sending heartbeats; forgetting its copies");
        this.#d.kv.removeReplica(r.model, r.worker);
      }
      const keys = this.#d.catalog.models.map((m) => m.key);
      const queued = await this.#queued();
      for (const [model, until] of this.#wantedUntil) {
        if (now > until) this.#wantedUntil.delete(model);
        else queued.set(model, Math.max(1, queued.get(model) ?? 0));
      }
      this.#meter.sample(keys, queued, this.#d.registry.itemsByModel(), now);
      const workers = this.#d.registry.memory();
      const shares = this.#d.policy.spareCopies === 1 ? this.#shares(workers, now) : undefined;
      const snapshot = {
        nowMs: now,
        models: this.#d.catalog.models.map((m) => this.#demandOf(m, now, shares?.get(m.key))),
        workers,
      };
      for (const action of planResidency(snapshot, this.#d.policy)) this.#start(action);
      this.#d.metrics?.round("ok");
    } catch (err) {
      this.#d.metrics?.round("failed");
      this.#d.logger.error({ err }, "placement round failed");
    }
  }

  /** Resident copies per model key, across this node's workers. */
  copies(): Map<string, number> {
    const out = new Map<string, number>();
    for (const w of this.#d.registry.all()) {
      for (const [model, replica] of w.replicas) {
        if (replica.state === "resident") out.set(model, (out.get(model) ?? 0) + 1);
      }
    }
    return out;
  }

  /** Models left alone until their cooldown ends (a failed load, or no room anywhere). */
  blocked(now = performance.now()): string[] {
    return [...this.#blockedUntil].filter(([, until]) => until > now).map(([model]) => model);
  }

  /** Work items in the stream per model key, in flight ones included (one API call). */
  async #queued(): Promise<Map<string, number>> {
    const info = await this.#d.jsm.streams.info(this.#d.stream, {
      subjects_filter: `${WORK_PREFIX}.>`,
    });
    const counts = new Map<string, number>();
    for (const [subject, n] of Object.entries(info.state.subjects ?? {})) {
      const key = subject.slice(WORK_PREFIX.length + 1).split(".")[0];
      if (key !== undefined) counts.set(key, (counts.get(key) ?? 0) + n);
    }
    return counts;
  }

  /**
   * Spare copies each model's demand is worth: the node's memory shared by arrival rate (at
   * least what its queue asks for), held at its highest for `spareWindowMs`, so a copy is not
   * dropped in a lull between bursts.
   */
  #shares(workers: readonly WorkerMemory[], now: number): Map<string, number> {
    const p = this.#d.policy;
    const usable = workers.reduce((n, w) => n + usableBytes(w.capacityBytes, p), 0);
    const models = this.#d.catalog.models.map((m) => ({
      model: m.key,
      bytes: this.#bytesOf(m),
      rate: this.#meter.get(m.key).ratePerS,
    }));
    const shares = new Map<string, number>();
    for (const [model, share] of memoryShares(models, usable, workers.length, 1)) {
      const queued = Math.ceil(this.#meter.get(model).pending / p.replicateAbovePending);
      shares.set(
        model,
        this.#shareWindow.stabilized(model, Math.max(share, queued), now, p.spareWindowMs),
      );
    }
    return shares;
  }

  #bytesOf(m: ModelEntry): number {
    return this.#learnedBytes.get(m.key) ?? expectedBytes(m);
  }

  #demandOf(m: ModelEntry, now: number, shareCopies: number | undefined): ModelDemand {
    const measured = this.#meter.get(m.key);
    const hasCopy = this.#d.registry.all().some((w) => w.replicas.get(m.key)?.state === "resident");
    if (measured.pending > 0 && !hasCopy) {
      if (!this.#waitingSince.has(m.key)) this.#waitingSince.set(m.key, now);
    } else {
      this.#waitingSince.delete(m.key);
    }
    const blockedUntil = this.#blockedUntil.get(m.key);
    if (blockedUntil !== undefined && now >= blockedUntil) this.#blockedUntil.delete(m.key);
    return {
      model: m.key,
      pinned: m.pinned,
      copies: m.serving?.replicas,
      bytes: this.#bytesOf(m),
      loadMs: this.#learnedLoadMs.get(m.key) ?? UNKNOWN_LOAD_MS,
      pending: measured.pending,
      ratePerS: measured.ratePerS,
      lastDemandAt: measured.lastDemandAt,
      waitingSince: this.#waitingSince.get(m.key),
      blocked: this.#blockedUntil.has(m.key),
      ...(shareCopies === undefined ? {} : { shareCopies }),
    };
  }

  #start(action: ResidencyAction): void {
    const entry = this.#d.catalog.byKey(action.model);
    if (entry === undefined) return;
    if (action.kind === "unplaceable") {
      this.#block(entry, "unplaceable", action.message);
      return;
    }
    const worker = this.#d.registry.get(action.worker);
    if (worker === undefined) return;
    worker.busy = true;
    const span = this.#d.tracer.startSpan(`loader.${action.kind}`, {
      attributes: {
        "shoal.model": entry.key,
        "shoal.worker_id": action.worker,
        ...(action.kind === "load" ? { "shoal.reason": action.reason } : {}),
      },
    });
    const ctx = trace.setSpan(ROOT_CONTEXT, span);
    const run =
      action.kind === "load"
        ? this.#load(entry, action.worker, action.evict, ctx).then((outcome) => {
            if (outcome !== undefined) this.#d.metrics?.loaded(entry.key, action.reason, outcome);
            endSpan(span, outcome ?? "not_begun", outcome === "ok");
          })
        : this.#unload(entry, action.worker, UNLOAD_REASONS[action.reason], ctx).then(() => {
            endSpan(span, "done", true);
          });
    const running: Promise<void> = run
      .catch((err: unknown) => {
        endSpan(span, "error", false);
        this.#d.logger.error({ err, model: entry.id, worker: action.worker }, "action failed");
      })
      .finally(() => {
        worker.busy = false;
        worker.settledAt = performance.now();
        this.#actions.delete(running);
      });
    this.#actions.add(running);
  }

  /** Fetches and loads `entry` on `workerId`; resolves with how it ended (none if never begun). */
  async #load(
    entry: ModelEntry,
    workerId: string,
    evict: readonly string[],
    ctx: Context,
  ): Promise<LoaderLoadOutcome | undefined> {
    const log = this.#d.logger.child({ model: entry.id, worker: workerId });
    const worker = this.#d.registry.get(workerId);
    if (worker === undefined) return undefined;
    const expected = this.#learnedBytes.get(entry.key) ?? expectedBytes(entry);
    this.#setReplica(workerId, entry.key, "loading", expected);
    const fetchSpan = this.#d.tracer.startSpan("loader.fetch", {}, ctx);
    try {
      this.#setStatus(entry.key, { state: "fetching" });
      await this.#d.fetcher.fetch(entry, (e) => {
        // Progress comes about once per MiB; the KV gets about one in eight, and the last.
        if (e.bytesDone === e.bytesTotal || e.bytesDone % (8 * 1024 ** 2) < 1024 ** 2) {
          this.#setStatus(entry.key, {
            state: "fetching",
            bytesDone: e.bytesDone,
            ...(e.bytesTotal === undefined ? {} : { bytesTotal: e.bytesTotal }),
          });
        }
      });
    } catch (err) {
      fetchSpan.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      this.#dropReplica(workerId, entry.key);
      this.#block(entry, "failed", (err as Error).message);
      return "fetch_failed";
    } finally {
      fetchSpan.end();
    }
    for (const victim of evict) {
      const victimEntry = this.#d.catalog.byKey(victim);
      if (victimEntry !== undefined) await this.#unload(victimEntry, workerId, "evicted", ctx);
    }
    const started = performance.now();
    const reply = await this.#control(workerId, "load", entry.key, this.#d.controlTimeoutMs, ctx);
    if (reply === "unreachable") {
      // The worker is gone or hung, not the model at fault: placed elsewhere next round.
      this.#dropReplica(workerId, entry.key);
      return "worker_unreachable";
    }
    if (reply.ok) {
      const bytes = reply.memoryBytes ?? expected;
      const loadMs = reply.loadUs === undefined ? performance.now() - started : reply.loadUs / 1000;
      this.#learnedBytes.set(entry.key, bytes);
      this.#learnedLoadMs.set(entry.key, loadMs);
      this.#failures.succeeded(entry.key);
      this.#churn.loaded(entry.key, performance.now());
      this.#setReplica(workerId, entry.key, "resident", bytes);
      this.#setStatus(entry.key, { state: "ready" });
      log.info(
        { memory_bytes: bytes, load_ms: Math.round(loadMs), evicted: evict },
        "model loaded",
      );
      return "ok";
    }
    this.#dropReplica(workerId, entry.key);
    if (reply.code === "oom") {
      // The sidecar's figure replaces the estimate, so the retry makes room for the real size.
      const measured = reply.memoryBytes ?? Math.ceil(expected * 1.5);
      this.#learnedBytes.set(entry.key, Math.max(measured, expected));
      const verdict = this.#failures.failed(entry.key, "out-of-memory", reply.message);
      if (verdict.next === "retry") {
        log.warn(
          { memory_bytes: measured, message: reply.message },
          "out of memory; evicting and retrying once",
        );
        return "oom";
      }
      this.#block(entry, "unplaceable", verdict.message);
      return "oom";
    }
    if (reply.code === "busy") return "worker_busy";
    this.#failures.failed(entry.key, "failed", reply.message);
    this.#block(entry, "failed", reply.message);
    return "failed";
  }

  async #unload(
    entry: ModelEntry,
    workerId: string,
    reason: LoaderUnloadReason,
    ctx: Context,
  ): Promise<void> {
    const worker = this.#d.registry.get(workerId);
    const replica = worker?.replicas.get(entry.key);
    if (replica === undefined) return;
    this.#setReplica(workerId, entry.key, "evicting", replica.bytes);
    const reply = await this.#control(workerId, "unload", entry.key, this.#d.controlTimeoutMs, ctx);
    if (reply === "unreachable") return;
    if (!reply.ok) {
      this.#d.logger.warn({ model: entry.id, worker: workerId, reply }, "unload refused");
      this.#setReplica(workerId, entry.key, "resident", replica.bytes);
      return;
    }
    this.#dropReplica(workerId, entry.key);
    this.#churn.evicted(entry.key, performance.now());
    this.#d.metrics?.unloaded(entry.key, reason);
    this.#d.logger.info({ model: entry.id, worker: workerId, reason }, "model unloaded");
  }

  /** A control request; `unreachable` when the worker did not answer (gone, timed out). */
  async #control(
    worker: string,
    op: "load" | "unload",
    model: string,
    timeoutMs: number,
    ctx: Context,
  ): Promise<ControlReply | "unreachable"> {
    let data: Uint8Array;
    // The worker's load or unload span continues this trace.
    const hdrs = headers();
    injectContext(ctx, natsHeaderCarrier(hdrs));
    try {
      const msg = await this.#d.nc.request(controlSubject(worker), encodeControl({ op, model }), {
        timeout: timeoutMs,
        headers: hdrs,
      });
      data = msg.data;
    } catch (err) {
      this.#d.logger.warn({ err, worker, op, model }, "worker did not answer");
      return "unreachable";
    }
    try {
      return decodeControlReply(data);
    } catch (err) {
      return {
        ok: false,
        code: "failed",
        message: `malformed reply from worker ${worker}: ${(err as Error).message}`,
      };
    }
  }

  #block(entry: ModelEntry, state: "failed" | "unplaceable", message: string): void {
    const wasBlocked = this.#blockedUntil.has(entry.key);
    this.#blockedUntil.set(entry.key, performance.now() + this.#d.failureCooldownMs);
    this.#setStatus(entry.key, { state, message });
    if (!wasBlocked) {
      this.#d.logger.error(
        { model: entry.id, state, cooldown_ms: this.#d.failureCooldownMs },
        `model ${state}: ${message}`,
      );
    }
  }

  #setReplica(
    workerId: string,
    model: string,
    state: "loading" | "resident" | "evicting",
    bytes: number,
  ): void {
    const worker = this.#d.registry.get(workerId);
    if (worker === undefined) return;
    const since = performance.now();
    const sinceUnixMs = Date.now();
    const items = worker.replicas.get(model)?.items ?? 0;
    worker.replicas.set(model, { state, bytes, since, sinceUnixMs, items });
    this.#d.kv.replica({ model, worker: workerId, state, memoryBytes: bytes, sinceUnixMs });
  }

  #dropReplica(workerId: string, model: string): void {
    this.#d.registry.get(workerId)?.replicas.delete(model);
    this.#d.kv.removeReplica(model, workerId);
  }

  #setStatus(model: string, status: ModelStatus & { state: ModelState }): void {
    this.#status.set(model, status);
    this.#d.kv.model({ model, ...status, updatedUnixMs: Date.now() });
  }
}

/**
 * What a model takes on a worker before one has reported it: the catalog's size of one copy,
 * once per model thread, since each thread holds its own weights (`serving.modelThreads`).
 */
function expectedBytes(entry: ModelEntry): number {
  return (entry.memoryBytes ?? UNKNOWN_MODEL_BYTES) * (entry.serving?.modelThreads ?? 1);
}

/** Ends a load or unload span with how the action ended. */
function endSpan(span: Span, outcome: string, ok: boolean): void {
  span.setAttribute("shoal.outcome", outcome);
  if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  span.end();
}
