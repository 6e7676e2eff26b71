/**
 * What the console's page receives once a second (`/events`, server-sent events) and on demand
 * (`/api/snapshot`): the fleet as the services publish it. One snapshot is built per second
 * whatever the number of open pages; the browser only draws it.
 */
export interface ConsoleSnapshot {
  /** Unix ms the snapshot was built. */
  readonly at: number;
  /** Whether each source answered its last read; the page shows the ones that did not. */
  readonly sources: Readonly<Record<SourceName, SourceState>>;
  readonly nodes: readonly NodeView[];
  readonly queues: readonly QueueView[];
  readonly models: readonly ModelView[];
  /** Newest first, at most {@link MAX_EVENTS}. */
  readonly events: readonly ResidencyEvent[];
  readonly requests: RequestsView;
  readonly benchmarks: readonly BenchmarkView[];
}

export type SourceName = "nats" | "loaders" | "metrics" | "traces" | "benchmarks";

export interface SourceState {
  /** `ok` it answered, `down` it did not, `off` the console was not told where it is. */
  readonly state: "ok" | "down" | "off";
  /** What failed, or where it is. */
  readonly detail: string;
  /** Unix ms of the last good read; absent when there has been none. */
  readonly lastOkAt?: number;
}

export const MAX_EVENTS = 50;
/** Points kept per sparkline: one a second, two minutes. */
export const HISTORY_POINTS = 120;

export interface NodeView {
  readonly node: string;
  readonly workers: readonly WorkerView[];
}

/** One worker: its accelerator, from its heartbeats and the residency bucket. */
export interface WorkerView {
  readonly worker: string;
  readonly node: string;
  readonly capacityBytes: number;
  /** What the model-loader keeps free: copies are placed only below `capacity − headroom`. */
  readonly headroomBytes: number;
  /** Memory of the copies it holds (loading copies at their expected size). */
  readonly usedBytes: number;
  /** Unix ms of its last heartbeat. */
  readonly lastSeenAt: number;
  /** No heartbeat for several intervals: shown, marked, until the loader forgets it. */
  readonly stale: boolean;
  /** Share of the last interval its sidecar spent computing, 0 to 1. */
  readonly busyFraction: number;
  /** Items per batch over the last interval; 0 when it ran none. */
  readonly batchSize: number;
  readonly copies: readonly CopyView[];
}

export interface CopyView {
  readonly model: string;
  /** The catalog's id for the key, or the key when the catalog does not list it. */
  readonly id: string;
  readonly state: "loading" | "resident" | "evicting";
  readonly memoryBytes: number;
  readonly pinned: boolean;
  readonly busyFraction: number;
  readonly batchSize: number;
  /** Unix ms it entered its state. */
  readonly since: number;
}

export interface QueueView {
  readonly model: string;
  readonly id: string;
  /** Unfinished work messages by length bucket (its upper edge in tokens). */
  readonly buckets: readonly { readonly bucket: number; readonly messages: number }[];
  /** Messages not yet delivered to a worker. */
  readonly waiting: number;
  /** Messages delivered and not yet acknowledged. */
  readonly held: number;
  /** Age of the oldest unfinished message, seconds; absent when none is. */
  readonly oldestAgeS?: number;
  /** Items a second stored by ingress (its metrics); absent when no ingress is scraped. */
  readonly arrivalsPerS?: number;
  /** Items a second computed by the workers (their heartbeats). */
  readonly completionsPerS: number;
  /** Items pulled and handed back unrun, since each worker began pulling the model. */
  readonly putBacks: number;
  readonly deadLetters: number;
  readonly history: {
    readonly depth: readonly number[];
    readonly arrivals: readonly number[];
    readonly completions: readonly number[];
  };
}

export interface ModelView {
  readonly id: string;
  readonly key: string;
  readonly family: string;
  readonly pinned: boolean;
  /** The model-loader's record: fetching, ready, failed, unplaceable; absent before any. */
  readonly status?: string;
  readonly statusMessage?: string;
  readonly copies: readonly { worker: string; node: string; state: string }[];
  readonly adapters: readonly AdapterView[];
}

export interface AdapterView {
  readonly name: string;
  readonly owner: string;
  readonly sharedWith: readonly string[];
  readonly versions: readonly number[];
}

export interface ResidencyEvent {
  readonly at: number;
  readonly model: string;
  readonly id: string;
  readonly worker: string;
  readonly node: string;
  /** A copy started loading, became resident, started evicting, or went away. */
  readonly kind: "loading" | "resident" | "evicting" | "gone";
  /** For `resident`: how long it was loading; for `gone`: how long it had been there. */
  readonly durationMs?: number;
}

export interface RequestsView {
  /** Seconds of history the percentiles cover (up to the configured window). */
  readonly windowS: number;
  readonly phases: readonly PhaseLatency[];
  /** Whole requests per model, busiest first. */
  readonly models: readonly ModelLatency[];
  /** The slowest recent traced requests, when a trace backend is configured. */
  readonly slow: readonly SlowRequest[];
}

/** Requests counted in the window and their latency percentiles. */
export interface Percentiles {
  readonly count: number;
  /** Milliseconds, interpolated within the histogram's buckets; absent with no requests. */
  readonly p50Ms?: number;
  readonly p90Ms?: number;
  readonly p99Ms?: number;
}

export interface PhaseLatency extends Percentiles {
  /** `total`, or a `Server-Timing` phase: annotate, queue, batch, compute. */
  readonly phase: string;
}

export interface ModelLatency extends Percentiles {
  /** Catalog id (`unknown` for requests refused before a model was read). */
  readonly model: string;
}

export interface SlowRequest {
  readonly traceId: string;
  readonly name: string;
  readonly durationMs: number;
  readonly at: number;
  /** The trace in the trace backend's UI. */
  readonly url: string;
}

export interface BenchmarkView {
  /** The result file, relative to the benchmarks directory. */
  readonly file: string;
  readonly modifiedAt: number;
  readonly scenario?: string;
  /** Top-level numbers of the result (e.g. `pull_over_router`), as the bench wrote them. */
  readonly headline: Readonly<Record<string, number>>;
  /** Charts beside it, served under `/bench/`. */
  readonly charts: readonly string[];
}
