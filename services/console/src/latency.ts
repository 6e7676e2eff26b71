import type { PromSample } from "./prom-text.js";
import type { ModelLatency, Percentiles, PhaseLatency } from "./snapshot.js";

/** What one scrape of every ingress yields, summed over ingresses and routes. */
export interface IngressReading {
  readonly at: number;
  /**
   * `phase:<name>` (`phase:total` for the whole request, over every model) or `model:<id>`
   * (whole requests of one model) → bucket upper edge (s) → cumulative count.
   */
  readonly buckets: ReadonlyMap<string, ReadonlyMap<number, number>>;
  /** model key → items stored in the work stream so far. */
  readonly arrivals: ReadonlyMap<string, number>;
}

const DURATION = "shoal_ingress_request_duration_seconds_bucket";
const PHASE = "shoal_ingress_request_phase_seconds_bucket";
const ARRIVALS = "shoal_queue_arrivals_total";
export const INGRESS_FAMILIES = [DURATION, PHASE, ARRIVALS] as const;
export const PHASES = ["total", "annotate", "queue", "batch", "compute"] as const;

/** Sums the samples of one or more ingress scrapes into a reading. */
export function ingressReading(at: number, samples: readonly PromSample[]): IngressReading {
  const buckets = new Map<string, Map<number, number>>();
  const arrivals = new Map<string, number>();
  for (const s of samples) {
    if (s.name === ARRIVALS) {
      const model = s.labels["model"] ?? "";
      arrivals.set(model, (arrivals.get(model) ?? 0) + s.value);
      continue;
    }
    const phase = s.name === DURATION ? "total" : s.name === PHASE ? s.labels["phase"] : undefined;
    const le = s.labels["le"];
    if (phase === undefined || le === undefined) continue;
    const edge = le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le);
    const add = (series: string): void => {
      const byEdge = buckets.get(series) ?? new Map<number, number>();
      byEdge.set(edge, (byEdge.get(edge) ?? 0) + s.value);
      buckets.set(series, byEdge);
    };
    add(`phase:${phase}`);
    if (s.name === DURATION) add(`model:${s.labels["model"] ?? "unknown"}`);
  }
  return { at, buckets, arrivals };
}

/**
 * Readings over the last `windowMs`: latency percentiles per phase from the difference of the
 * histograms' cumulative buckets between the window's first and last reading, and arrival
 * rates between the last two. Counters that went backwards (an ingress restarted) restart the
 * window.
 */
export class LatencyWindow {
  readonly #windowMs: number;
  #readings: IngressReading[] = [];

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  add(reading: IngressReading): void {
    const last = this.#readings.at(-1);
    if (last !== undefined && wentBack(last, reading)) this.#readings = [];
    this.#readings.push(reading);
    while (
      this.#readings.length > 2 &&
      reading.at - (this.#readings[0] as IngressReading).at > this.#windowMs
    ) {
      this.#readings.shift();
    }
  }

  /** Seconds between the window's first and last reading. */
  spanS(): number {
    const first = this.#readings[0];
    const last = this.#readings.at(-1);
    return first === undefined || last === undefined ? 0 : (last.at - first.at) / 1000;
  }

  phases(): PhaseLatency[] {
    return PHASES.map((phase) => ({ phase, ...this.#percentiles(`phase:${phase}`) }));
  }

  /** Whole-request latency per model id, busiest first. */
  models(): ModelLatency[] {
    const last = this.#readings.at(-1);
    if (last === undefined) return [];
    return [...last.buckets.keys()]
      .filter((k) => k.startsWith("model:"))
      .map((k) => ({ model: k.slice("model:".length), ...this.#percentiles(k) }))
      .filter((m) => m.count > 0)
      .sort((a, b) => b.count - a.count);
  }

  #percentiles(series: string): Percentiles {
    const first = this.#readings[0];
    const last = this.#readings.at(-1);
    if (first === undefined || last === undefined || first === last) return { count: 0 };
    const now = last.buckets.get(series) ?? new Map<number, number>();
    const then = first.buckets.get(series) ?? new Map<number, number>();
    const counts = [...now]
      .map(([edge, n]): [number, number] => [edge, n - (then.get(edge) ?? 0)])
      .sort(([a], [b]) => a - b);
    const count = counts.at(-1)?.[1] ?? 0;
    if (count <= 0) return { count: 0 };
    return {
      count,
      ...quantileMs("p50Ms", counts, count * 0.5),
      ...quantileMs("p90Ms", counts, count * 0.9),
      ...quantileMs("p99Ms", counts, count * 0.99),
    };
  }

  /** Items a second ingress stored for model `key` between the last two readings. */
  arrivalsPerS(key: string): number | undefined {
    const last = this.#readings.at(-1);
    const before = this.#readings.at(-2);
    if (last === undefined || before === undefined) return undefined;
    const seconds = (last.at - before.at) / 1000;
    if (seconds <= 0) return undefined;
    return ((last.arrivals.get(key) ?? 0) - (before.arrivals.get(key) ?? 0)) / seconds;
  }
}

/**
 * The `rank`-th request's latency in ms, interpolated linearly inside its bucket as
 * Prometheus's `histogram_quantile` does; in the `+Inf` bucket, the largest finite edge.
 */
function quantileMs(
  key: "p50Ms" | "p90Ms" | "p99Ms",
  cumulative: readonly [number, number][],
  rank: number,
): Record<string, number> {
  let lowerEdge = 0;
  let below = 0;
  for (const [edge, n] of cumulative) {
    if (n >= rank) {
      if (!Number.isFinite(edge)) return { [key]: lowerEdge * 1000 };
      const share = n > below ? (rank - below) / (n - below) : 1;
      return { [key]: (lowerEdge + (edge - lowerEdge) * share) * 1000 };
    }
    lowerEdge = edge;
    below = n;
  }
  return {};
}

function wentBack(before: IngressReading, now: IngressReading): boolean {
  for (const [series, edges] of before.buckets) {
    const inf = edges.get(Number.POSITIVE_INFINITY) ?? 0;
    const nowInf = now.buckets.get(series)?.get(Number.POSITIVE_INFINITY) ?? 0;
    if (nowInf < inf) return true;
  }
  return false;
}
