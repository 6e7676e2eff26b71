import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { SpanStatusCode, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";
import type { Catalog, ModelEntry } from "@shoal/config";
import { ensureModel, type CompiledEnsureModelOptions } from "@shoal/model-sources";
import {
  controlSubject,
  decodeControlRequest,
  encodeControl,
  heartbeatSubject,
  isOutOfMemoryMessage,
  type ControlReply,
  type ControlRequest,
  type HeartbeatModel,
  type ReplicaState,
} from "@shoal/residency";
import { SidecarError, type LoadOptions, type SidecarClient } from "@shoal/sidecar-client";
import { extractContext, natsHeaderCarrier, traceparentOf, type Logger } from "@shoal/telemetry";
import { loadOptionsFor, loadPath } from "./load-options.js";
import type { ModelLoadRecord } from "./load-trace.js";
import type { ResidencyMetrics } from "./residency-metrics.js";

/** What a worker runs for one resident model: its pull loop. */
export interface ModelRunner {
  start(): void;
  /** Stops pulling; resolves once the batches in hand are finished or put back. */
  stop(): Promise<void>;
  /** Items pulled and handed back unrun so far; runners that never put back have none. */
  putBacks?(): number;
}

export interface ResidentModelsOptions {
  readonly nc: NatsConnection;
  readonly catalog: Catalog;
  readonly workerId: string;
  /** The node (host) this worker's model-loader manages. */
  readonly node: string;
  /**
   * Memory of this worker's accelerator, bytes. A load that leaves the models' reported
   * `memory_bytes` above it is undone and answered `oom`, exactly as if the device had run out.
   */
  readonly capacityBytes: number;
  /** How often the worker tells its model-loader what it holds. */
  readonly heartbeatMs: number;
  readonly sidecar: () => Promise<SidecarClient>;
  /**
   * Creates (and registers the consumer for) the pull loop of a model just loaded; `load` is
   * what the requests that waited for it record in their traces.
   */
  readonly runner: (model: ModelEntry, load: ModelLoadRecord) => Promise<ModelRunner>;
  readonly sources: CompiledEnsureModelOptions;
  /** Longest a sidecar `load` may take. */
  readonly loadTimeoutMs: number;
  /** Loads and unloads are counted here; none recorded without. */
  readonly metrics?: ResidencyMetrics | undefined;
  readonly logger: Logger;
  /** Loads and unloads get spans in the model-loader's trace that asked for them. */
  readonly tracer: Tracer;
}

interface Held {
  readonly entry: ModelEntry;
  state: ReplicaState;
  memoryBytes: number;
  runner: ModelRunner | undefined;
}

/**
 * The models this worker holds when a model-loader manages its node. Nothing is loaded at
 * start: the loader sends `load` and `unload` on the worker's control subject, and the worker
 * pulls a model's work only while it is resident, so it never takes work it cannot run. A load
 * runs on the sidecar's own thread; the pull loops of the other models go on meanwhile.
 */
export class ResidentModels {
  readonly #o: ResidentModelsOptions;
  readonly #held = new Map<string, Held>();
  #sub: Subscription | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ResidentModelsOptions) {
    this.#o = options;
  }

  /** Models to load into a fresh sidecar after a restart: what was resident before. */
  resident(): ModelEntry[] {
    return [...this.#held.values()].filter((h) => h.state === "resident").map((h) => h.entry);
  }

  /** Load options for a model on the sidecar at hand (simulation parameters on a sim one). */
  async loadOptions(client: SidecarClient, entry: ModelEntry): Promise<LoadOptions> {
    return loadOptionsFor(client, entry, this.#o.loadTimeoutMs);
  }

  start(): void {
    const sub = this.#o.nc.subscribe(controlSubject(this.#o.workerId));
    this.#sub = sub;
    void (async () => {
      for await (const msg of sub) {
        // Requests are handled concurrently: an unload must not wait behind a long load.
        void this.#handle(msg).then((reply) => msg.respond(encodeControl(reply)));
      }
    })();
    this.#timer = setInterval(() => void this.#heartbeat(), this.#o.heartbeatMs);
    void this.#heartbeat();
  }

  /** Stops taking control requests and heartbeats, and stops every pull loop. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#sub?.unsubscribe();
    const runners = [...this.#held.values()].flatMap((h) =>
      h.runner === undefined ? [] : [h.runner],
    );
    await Promise.all(runners.map((r) => r.stop()));
  }

  async #handle(msg: Msg): Promise<ControlReply> {
    let request: ControlRequest;
    try {
      request = decodeControlRequest(msg.data);
    } catch (err) {
      return { ok: false, code: "bad_request", message: (err as Error).message };
    }
    const entry = this.#o.catalog.byKey(request.model);
    if (entry === undefined) {
      return {
        ok: false,
        code: "unknown_model",
        message: `no catalog model has key ${request.model}`,
      };
    }
    const parent = extractContext(natsHeaderCarrier(msg.headers));
    const span = this.#o.tracer.startSpan(
      request.op === "load" ? "worker.model_load" : "worker.model_unload",
      { attributes: { "shoal.model": entry.key, "shoal.worker_id": this.#o.workerId } },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    const reply = await (request.op === "load"
      ? this.#load(entry, ctx, span)
      : this.#unload(entry));
    if (!reply.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: reply.message });
    span.end();
    return reply;
  }

  async #load(entry: ModelEntry, ctx: Context, span: Span): Promise<ControlReply> {
    const held = this.#held.get(entry.key);
    if (held?.state === "resident") return { ok: true, memoryBytes: held.memoryBytes };
    if (held !== undefined) {
      return { ok: false, code: "busy", message: `${entry.id} is ${held.state}` };
    }
    const h: Held = { entry, state: "loading", memoryBytes: 0, runner: undefined };
    this.#held.set(entry.key, h);
    const log = this.#o.logger.child({ model: entry.id });
    const started = performance.now();
    const reply = await this.#loadHeld(entry, h, log, ctx, span);
    const outcome = reply.ok ? "ok" : reply.code === "oom" ? "oom" : "failed";
    this.#o.metrics?.loaded(entry.key, outcome, (performance.now() - started) / 1000);
    return reply;
  }

  async #loadHeld(
    entry: ModelEntry,
    h: Held,
    log: Logger,
    ctx: Context,
    span: Span,
  ): Promise<ControlReply> {
    const startMs = Date.now();
    try {
      const fetchSpan = this.#o.tracer.startSpan("model.fetch", {}, ctx);
      await ensureModel(entry, this.#o.sources).finally(() => {
        fetchSpan.end();
      });
      const client = await this.#o.sidecar();
      const options = await this.loadOptions(client, entry);
      const loaded = await client.load(entry.key, loadPath(entry), {
        ...options,
        traceparent: traceparentOf(ctx),
      });
      const used = [...this.#held.values()].reduce((n, x) => n + x.memoryBytes, 0);
      if (used + loaded.memoryBytes > this.#o.capacityBytes) {
        await client.unload(entry.key);
        this.#held.delete(entry.key);
        const message =
          `out of memory: ${entry.id} takes ${loaded.memoryBytes} bytes, ` +
          `${Math.max(0, this.#o.capacityBytes - used)} of ${this.#o.capacityBytes} are free`;
        log.warn({ memory_bytes: loaded.memoryBytes, used_bytes: used }, message);
        return { ok: false, code: "oom", message, memoryBytes: loaded.memoryBytes };
      }
      h.memoryBytes = loaded.memoryBytes;
      h.runner = await this.#o.runner(entry, {
        startMs,
        endMs: Date.now(),
        span: span.spanContext(),
      });
      h.state = "resident";
      h.runner.start();
      log.info({ memory_bytes: loaded.memoryBytes, load_us: loaded.loadUs }, "model resident");
      return { ok: true, memoryBytes: loaded.memoryBytes, loadUs: loaded.loadUs };
    } catch (err) {
      this.#held.delete(entry.key);
      const message = err instanceof Error ? err.message : String(err);
      const oom = err instanceof SidecarError && isOutOfMemoryMessage(message);
      log.error({ err }, "model load failed");
      return { ok: false, code: oom ? "oom" : "failed", message };
    }
  }

  async #unload(entry: ModelEntry): Promise<ControlReply> {
    const held = this.#held.get(entry.key);
    if (held === undefined) return { ok: true };
    if (held.state !== "resident") {
      return { ok: false, code: "busy", message: `${entry.id} is ${held.state}` };
    }
    held.state = "evicting";
    try {
      await held.runner?.stop();
      await (await this.#o.sidecar()).unload(entry.key);
      this.#o.logger.info({ model: entry.id }, "model unloaded");
      return { ok: true };
    } catch (err) {
      // The sidecar restarted meanwhile and lost the model anyway: it is gone either way.
      this.#o.logger.warn({ err, model: entry.id }, "unload failed; dropping the model");
      return { ok: true };
    } finally {
      this.#held.delete(entry.key);
      this.#o.metrics?.unloaded(entry.key);
    }
  }

  /** Tells the model-loader what this worker holds, with the sidecar's own figures. */
  async #heartbeat(): Promise<void> {
    const stats = new Map<
      string,
      { memoryBytes: number; items: number; batches: number; busyUs: number }
    >();
    try {
      const client = await Promise.race([
        this.#o.sidecar(),
        new Promise<never>((_, reject) => {
          setTimeout(() => {
            reject(new Error("restarting"));
          }, 200);
        }),
      ]);
      for (const m of (await client.stats({ timeoutMs: 2000 })).models) stats.set(m.model, m);
    } catch {
      // A sidecar that is restarting reports nothing; the held states still go out.
    }
    const models: HeartbeatModel[] = [...this.#held.values()].map((h) => {
      const s = stats.get(h.entry.key);
      const putBacks = h.runner?.putBacks?.();
      return {
        model: h.entry.key,
        state: h.state,
        memoryBytes: s?.memoryBytes ?? h.memoryBytes,
        items: s?.items ?? 0,
        ...(s === undefined ? {} : { batches: s.batches, busyUs: s.busyUs }),
        ...(putBacks === undefined ? {} : { putBacks }),
      };
    });
    if (this.#o.nc.isClosed()) return;
    this.#o.nc.publish(
      heartbeatSubject(this.#o.node),
      encodeControl({
        worker: this.#o.workerId,
        node: this.#o.node,
        capacityBytes: this.#o.capacityBytes,
        models,
      }),
    );
  }
}
