import type { JetStreamManager } from "@nats-io/jetstream";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection, QueuedIterator, Subscription } from "@nats-io/transport-node";
import { ADAPTER_INDEX_BUCKET, adapterWatch, type AdapterRecord } from "@shoal/adapters";
import type { Catalog } from "@shoal/config";
import {
  connectNats,
  DEAD_LETTER_STREAM,
  DEAD_PREFIX,
  drainOrClose,
  parseWorkSubject,
  readModelConsumers,
  readOldestStored,
  readSubjectCounts,
  WORK_PREFIX,
  WORK_STREAM,
  type NatsAuth,
} from "@shoal/jetstream";
import {
  decodeHeartbeat,
  decodeModel,
  decodeReplica,
  HEARTBEAT_PREFIX,
  RESIDENCY_BUCKET,
} from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import type { JaegerQuery } from "@shoal/traces";
import type { Benchmarks } from "./benchmarks.js";
import { FleetState } from "./fleet.js";
import { LatencyWindow } from "./latency.js";
import type { IngressScraper } from "./ingress-scraper.js";
import { QueueHistories, type QueueReading } from "./queues.js";
import { slowRequests } from "./slow-requests.js";
import type {
  AdapterView,
  BenchmarkView,
  ConsoleSnapshot,
  ModelView,
  QueueView,
  SlowRequest,
  SourceName,
  SourceState,
} from "./snapshot.js";

export interface CollectorOptions {
  readonly natsServers: string;
  readonly natsAuth: NatsAuth;
  readonly catalog: Catalog;
  readonly ingress: IngressScraper | undefined;
  /** Model-loader API base URLs, asked every few seconds whether they answer. */
  readonly loaders: readonly string[];
  readonly traces: { readonly query: JaegerQuery; readonly uiUrl: string } | undefined;
  readonly benchmarks: Benchmarks;
  /** The memory the model-loaders leave free on an accelerator of a size (drawn on its bar). */
  readonly headroom: (capacityBytes: number) => number;
  /** Percentiles and slow requests cover this much history. */
  readonly windowMs: number;
  readonly logger: Logger;
  /** Told whether NATS is reachable, for `/readyz`. */
  readonly readiness: { set(component: string, problem: string | undefined): void };
}

/** How often JetStream, ingress metrics, the trace backend and the bench results are read. */
const QUEUE_EVERY_MS = 1_000;
const SLOW_EVERY_MS = 5_000;
const LOADERS_EVERY_MS = 5_000;
const BENCH_EVERY_MS = 10_000;
/** A JetStream read slower than this counts as NATS not answering. */
const READ_TIMEOUT_MS = 2_000;

/**
 * Reads everything the console shows, once for all its pages: heartbeats and the residency and
 * adapter buckets by subscription (pushed to it), the work queue and ingress's metrics by a
 * read a second, the trace backend and bench results more rarely. Each source's failure is
 * recorded and shown; none stops the others, and NATS is reconnected for ever.
 */
export class Collector {
  readonly #o: CollectorOptions;
  readonly #fleet: FleetState;
  readonly #latency: LatencyWindow;
  readonly #histories = new QueueHistories();
  readonly #queues = new Map<string, QueueReading>();
  /** base model key → adapter name → record */
  readonly #adapters = new Map<string, Map<string, AdapterRecord>>();
  readonly #sources = new Map<SourceName, SourceState>();
  #slow: SlowRequest[] = [];
  #benchmarks: BenchmarkView[] = [];
  #nc: NatsConnection | undefined;
  #jsm: JetStreamManager | undefined;
  readonly #subs: Subscription[] = [];
  readonly #stops: (() => void)[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopped = false;

  constructor(options: CollectorOptions) {
    this.#o = options;
    this.#fleet = new FleetState(options.catalog, options.headroom);
    this.#latency = new LatencyWindow(options.windowMs);
    this.#source("nats", "down", `connecting to ${options.natsServers}`);
    this.#source(
      "loaders",
      options.loaders.length === 0 ? "off" : "down",
      options.loaders.length === 0 ? "no model-loader API configured" : "not asked yet",
    );
    this.#source(
      "metrics",
      options.ingress === undefined ? "off" : "down",
      options.ingress === undefined ? "no ingress metrics configured" : "not read yet",
    );
    this.#source(
      "traces",
      options.traces === undefined ? "off" : "down",
      options.traces === undefined ? "no trace backend configured" : "not read yet",
    );
    this.#source(
      "benchmarks",
      options.benchmarks.configured ? "down" : "off",
      options.benchmarks.configured ? "not read yet" : "no benchmark directories configured",
    );
  }

  /** Starts reading; NATS is connected in the background (the page shows it until then). */
  start(): void {
    void this.#connect();
    this.#every(QUEUE_EVERY_MS, () => this.#readQueues());
    this.#every(QUEUE_EVERY_MS, () => this.#readIngress());
    if (this.#o.loaders.length > 0) this.#every(LOADERS_EVERY_MS, () => this.#askLoaders());
    if (this.#o.traces !== undefined) this.#every(SLOW_EVERY_MS, () => this.#readSlow());
    if (this.#o.benchmarks.configured) this.#every(BENCH_EVERY_MS, () => this.#readBenchmarks());
  }

  #running(): boolean {
    return !this.#stopped;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    for (const stop of this.#stops) stop();
    for (const sub of this.#subs) sub.unsubscribe();
    if (this.#nc !== undefined) await drainOrClose(this.#nc);
  }

  snapshot(): ConsoleSnapshot {
    const now = Date.now();
    this.#fleet.expire(now);
    return {
      at: now,
      sources: Object.fromEntries(this.#sources) as Record<SourceName, SourceState>,
      nodes: this.#fleet.nodes(now),
      queues: this.#queueViews(now),
      models: this.#modelViews(),
      events: this.#fleet.events(),
      requests: {
        windowS: Math.round(this.#latency.spanS()),
        phases: this.#latency.phases(),
        models: this.#latency.models(),
        slow: this.#slow,
      },
      benchmarks: this.#benchmarks,
    };
  }

  /** Runs `read` now and then `everyMs` after each run ends, so reads never overlap. */
  #every(everyMs: number, read: () => Promise<void>): void {
    const loop = async (): Promise<void> => {
      await read().catch((err: unknown) => {
        this.#o.logger.warn({ err }, "console read failed");
      });
      if (this.#running()) {
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          void loop();
        }, everyMs);
        this.#timers.add(timer);
      }
    };
    void loop();
  }

  #source(name: SourceName, state: SourceState["state"], detail: string): void {
    const before = this.#sources.get(name);
    const lastOkAt = state === "ok" ? Date.now() : before?.lastOkAt;
    this.#sources.set(name, { state, detail, ...(lastOkAt === undefined ? {} : { lastOkAt }) });
  }

  async #connect(): Promise<void> {
    const o = this.#o;
    const readiness = {
      set: (component: string, problem: string | undefined) => {
        o.readiness.set(component, problem);
        if (problem === undefined) this.#source("nats", "ok", `connected to ${o.natsServers}`);
        else this.#source("nats", "down", problem);
      },
    };
    // With a readiness sink the first connect waits for a server for ever.
    const nc = await connectNats(o.natsServers, "shoal-console", o.natsAuth, readiness);
    if (this.#stopped) {
      await nc.close();
      return;
    }
    this.#nc = nc;
    this.#jsm = await jetstreamManager(nc, { timeout: READ_TIMEOUT_MS });
    const heartbeats = nc.subscribe(`${HEARTBEAT_PREFIX}.*`);
    this.#subs.push(heartbeats);
    void (async () => {
      for await (const msg of heartbeats) {
        try {
          this.#fleet.heartbeat(decodeHeartbeat(msg.data), Date.now());
        } catch (err) {
          o.logger.debug({ err, subject: msg.subject }, "heartbeat unreadable; skipped");
        }
      }
    })();
    void this.#watch(RESIDENCY_BUCKET, async (entries) => {
      for await (const entry of entries) this.#applyResidency(entry);
    });
    void this.#watch(ADAPTER_INDEX_BUCKET, async (entries) => {
      const changes = adapterWatch(entries, (key, err) => {
        o.logger.debug({ err, key }, "adapter index entry unreadable; skipped");
      });
      for await (const change of changes) {
        const byName = this.#adapters.get(change.baseKey) ?? new Map<string, AdapterRecord>();
        this.#adapters.set(change.baseKey, byName);
        if (change.kind === "put") byName.set(change.name, change.record);
        else byName.delete(change.name);
      }
    });
  }

  /**
   * Follows a KV bucket with `consume` for as long as the console runs. The watch's ordered
   * consumer rides over NATS reconnections by itself (changes made meanwhile, deletes included,
   * arrive after); the bucket is opened again, every few seconds, while it does not exist yet
   * (its maker has not run) or if its watch ended.
   */
  async #watch(
    bucket: string,
    consume: (entries: QueuedIterator<KvWatchEntry>) => Promise<void>,
  ): Promise<void> {
    const nc = this.#nc;
    if (nc === undefined) return;
    while (this.#running()) {
      try {
        const entries = await (await new Kvm(nc).open(bucket)).watch({ key: ">" });
        this.#stops.push(() => {
          entries.stop();
        });
        await consume(entries);
      } catch (err) {
        this.#o.logger.debug({ err, bucket }, "bucket not readable; trying again");
      }
      if (this.#running()) await new Promise((r) => setTimeout(r, 3_000));
    }
  }

  #applyResidency(entry: KvWatchEntry): void {
    const now = Date.now();
    const [kind, model, worker] = entry.key.split(".");
    if (model === undefined) return;
    const deleted = entry.operation !== "PUT";
    try {
      if (kind === "replica" && worker !== undefined) {
        if (deleted) this.#fleet.replicaGone(model, worker, now);
        else this.#fleet.replica(decodeReplica(entry.value), now);
      } else if (kind === "model") {
        if (deleted) this.#fleet.modelRecordGone(model);
        else this.#fleet.modelRecord(decodeModel(entry.value));
      }
    } catch (err) {
      this.#o.logger.debug({ err, key: entry.key }, "residency record unreadable; skipped");
    }
  }

  async #readQueues(): Promise<void> {
    const jsm = this.#jsm;
    if (jsm === undefined || this.#nc?.isClosed() !== false) return;
    const keys = this.#o.catalog.models.map((m) => m.key);
    const skip = (): void => undefined;
    try {
      const subjects = await readSubjectCounts(jsm, WORK_STREAM, `${WORK_PREFIX}.>`);
      const dead = await readSubjectCounts(jsm, DEAD_LETTER_STREAM, `${DEAD_PREFIX}.>`).catch(
        () => new Map<string, number>(),
      );
      const buckets = new Map<string, Map<number, number>>();
      for (const [subject, n] of subjects) {
        const parsed = parseWorkSubject(subject);
        if (parsed === undefined) continue;
        const byBucket = buckets.get(parsed.modelKey) ?? new Map<number, number>();
        byBucket.set(parsed.bucket, (byBucket.get(parsed.bucket) ?? 0) + n);
        buckets.set(parsed.modelKey, byBucket);
      }
      // Consumers and oldest messages are read only for models with unfinished work: an idle
      // catalog of a hundred models costs two requests a second, not two hundred.
      const busy = keys.filter((k) => buckets.has(k));
      const consumers = await readModelConsumers(jsm, WORK_STREAM, busy, skip);
      const oldest = await readOldestStored(jsm, WORK_STREAM, busy, skip);
      for (const key of keys) {
        const info = consumers.get(key);
        const oldestAt = oldest.get(key);
        this.#queues.set(key, {
          buckets: buckets.get(key) ?? new Map(),
          waiting: info?.num_pending ?? 0,
          held: info?.num_ack_pending ?? 0,
          ...(oldestAt === undefined ? {} : { oldestAt }),
          deadLetters: dead.get(`${DEAD_PREFIX}.${key}`) ?? 0,
        });
      }
      this.#source("nats", "ok", `connected to ${this.#o.natsServers}`);
    } catch (err) {
      this.#source("nats", "down", `work queue unreadable: ${(err as Error).message}`);
    }
  }

  async #readIngress(): Promise<void> {
    const scraper = this.#o.ingress;
    if (scraper === undefined) return;
    const outcome = await scraper.read();
    if (outcome.reading !== undefined) this.#latency.add(outcome.reading);
    if (outcome.failed.length === 0) this.#source("metrics", "ok", scraper.describe());
    else this.#source("metrics", "down", outcome.failed.join("; "));
  }

  /**
   * Whether each model-loader answers its API. Residency is what they publish: while one is
   * down its node's copies stop changing, which the page alone could not tell from a calm fleet.
   */
  async #askLoaders(): Promise<void> {
    const failed: string[] = [];
    await Promise.all(
      this.#o.loaders.map(async (url) => {
        try {
          const res = await fetch(`${url.replace(/\/+$/, "")}/v1/residency`, {
            signal: AbortSignal.timeout(READ_TIMEOUT_MS),
          });
          await res.body?.cancel();
          if (res.status !== 200) throw new Error(`answered ${res.status}`);
        } catch (err) {
          failed.push(`${url}: ${(err as Error).message}`);
        }
      }),
    );
    if (failed.length === 0) this.#source("loaders", "ok", this.#o.loaders.join(", "));
    else this.#source("loaders", "down", failed.join("; "));
  }

  async #readSlow(): Promise<void> {
    const traces = this.#o.traces;
    if (traces === undefined) return;
    try {
      this.#slow = await slowRequests(traces.query, traces.uiUrl, this.#o.windowMs, Date.now());
      this.#source("traces", "ok", traces.uiUrl);
    } catch (err) {
      this.#source("traces", "down", (err as Error).message);
    }
  }

  async #readBenchmarks(): Promise<void> {
    this.#benchmarks = await this.#o.benchmarks.scan();
    this.#source("benchmarks", "ok", `${this.#benchmarks.length} results found`);
  }

  #queueViews(now: number): QueueView[] {
    return this.#o.catalog.models.map((m) => {
      const q = this.#queues.get(m.key);
      const arrivals = this.#latency.arrivalsPerS(m.key);
      const completions = this.#fleet.completionsPerS(m.key);
      return {
        model: m.key,
        id: m.id,
        buckets: [...(q?.buckets ?? [])]
          .sort(([a], [b]) => a - b)
          .map(([bucket, messages]) => ({ bucket, messages })),
        waiting: q?.waiting ?? 0,
        held: q?.held ?? 0,
        ...(q?.oldestAt === undefined ? {} : { oldestAgeS: Math.max(0, now - q.oldestAt) / 1000 }),
        ...(arrivals === undefined ? {} : { arrivalsPerS: arrivals }),
        completionsPerS: completions,
        putBacks: this.#fleet.putBacks(m.key),
        deadLetters: q?.deadLetters ?? 0,
        history: this.#histories.peek(m.key),
      };
    });
  }

  /** Appends this second's point to every model's sparklines (called once per snapshot). */
  recordHistory(): void {
    for (const m of this.#o.catalog.models) {
      const q = this.#queues.get(m.key);
      this.#histories.push(
        m.key,
        q === undefined ? 0 : q.waiting + q.held,
        this.#latency.arrivalsPerS(m.key) ?? 0,
        this.#fleet.completionsPerS(m.key),
      );
    }
  }

  #modelViews(): ModelView[] {
    return this.#o.catalog.models.map((m) => {
      const record = this.#fleet.modelRecordOf(m.key);
      const adapters: AdapterView[] = [...(this.#adapters.get(m.key)?.values() ?? [])]
        .map((a) => ({
          name: a.name,
          owner: a.owner,
          sharedWith: [...(a.sharedWith ?? [])],
          versions: a.versions.map((v) => v.version),
        }))
        .sort((a, b) => a.name.localeCompare(b.name));
      return {
        id: m.id,
        key: m.key,
        family: m.family,
        pinned: m.pinned,
        ...(record === undefined ? {} : { status: record.state }),
        ...(record?.message === undefined ? {} : { statusMessage: record.message }),
        copies: this.#fleet.copiesOf(m.key),
        adapters,
      };
    });
  }
}
