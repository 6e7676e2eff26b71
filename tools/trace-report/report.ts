import { PHASES, type Phase } from "./phases.js";
import type { RequestRecord } from "./request.js";

/** Percentiles of one quantity over requests, ms. */
export interface Spread {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

export interface PhaseSummary extends Spread {
  /** The phase's share of all requests' time together (0–1). */
  readonly share: number;
}

export interface GroupSummary {
  readonly requests: number;
  readonly errors: number;
  readonly totalMs: Spread;
  readonly phases: Readonly<Record<Phase, PhaseSummary>>;
  /** The phase with the largest share of the time: where to look first. */
  readonly dominant: Phase;
}

export interface SlowRequest {
  readonly traceId: string;
  readonly route: string;
  readonly model: string;
  readonly totalMs: number;
  readonly phasesMs: Readonly<Record<Phase, number>>;
  /** The request's time line: which span it was waiting on, in order, ms. */
  readonly path: readonly { readonly phase: Phase; readonly span: string; readonly ms: number }[];
}

/** Queue wait and compute of the requests in one class (a batch size range, loaded or not). */
export interface WaitRow {
  readonly label: string;
  readonly requests: number;
  readonly queueP50Ms: number;
  readonly queueP99Ms: number;
  readonly computeP50Ms: number;
}

export interface Report {
  readonly window: { readonly from: string; readonly to: string };
  readonly all: GroupSummary;
  readonly models: Readonly<Record<string, GroupSummary>>;
  readonly slowest: readonly SlowRequest[];
  /** Queue wait by the size of the batch a request ran in. */
  readonly queueByBatchSize: readonly WaitRow[];
  /** Queue wait of requests that waited for a model load against those that did not. */
  readonly queueByResidency: readonly WaitRow[];
}

/** Upper bounds of the batch-size classes, inputs. */
const BATCH_CLASSES = [1, 4, 16, 64, Infinity] as const;

export function buildReport(
  requests: readonly RequestRecord[],
  window: { from: Date; to: Date },
  slowest = 5,
): Report {
  const byModel = new Map<string, RequestRecord[]>();
  for (const r of requests) {
    const list = byModel.get(r.model);
    if (list === undefined) byModel.set(r.model, [r]);
    else list.push(r);
  }
  return {
    window: { from: window.from.toISOString(), to: window.to.toISOString() },
    all: summarize(requests),
    models: Object.fromEntries(
      [...byModel.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([m, rs]) => [m, summarize(rs)]),
    ),
    slowest: [...requests]
      .sort((a, b) => b.totalUs - a.totalUs)
      .slice(0, slowest)
      .map(slow),
    queueByBatchSize: batchRows(requests),
    queueByResidency: (
      [
        ["waited for a model load", requests.filter((r) => r.waitedForLoad)],
        ["model already resident", requests.filter((r) => !r.waitedForLoad)],
      ] as const
    ).flatMap(([label, rs]) => (rs.length === 0 ? [] : [waitRow(label, rs)])),
  };
}

function summarize(requests: readonly RequestRecord[]): GroupSummary {
  const total = requests.reduce((n, r) => n + r.totalUs, 0);
  const phases = Object.fromEntries(
    PHASES.map((p) => {
      const values = requests.map((r) => r.phases[p]);
      const sum = values.reduce((n, v) => n + v, 0);
      return [p, { ...spread(values), share: total > 0 ? sum / total : 0 }];
    }),
  ) as Record<Phase, PhaseSummary>;
  const dominant = PHASES.reduce((best, p) => (phases[p].share > phases[best].share ? p : best));
  return {
    requests: requests.length,
    errors: requests.filter((r) => r.error).length,
    totalMs: spread(requests.map((r) => r.totalUs)),
    phases,
    dominant,
  };
}

function slow(r: RequestRecord): SlowRequest {
  return {
    traceId: r.traceId,
    route: r.route,
    model: r.model,
    totalMs: ms(r.totalUs),
    phasesMs: Object.fromEntries(PHASES.map((p) => [p, ms(r.phases[p])])) as Record<Phase, number>,
    path: r.timeline.map((s) => ({ phase: s.phase, span: s.span, ms: ms(s.us) })),
  };
}

function batchRows(requests: readonly RequestRecord[]): WaitRow[] {
  const rows: WaitRow[] = [];
  let low = 1;
  for (const high of BATCH_CLASSES) {
    const rs = requests.filter(
      (r) => r.batchItems !== undefined && r.batchItems >= low && r.batchItems <= high,
    );
    const label =
      high === Infinity
        ? `${low}+ inputs`
        : low === high
          ? `${low} input`
          : `${low}–${high} inputs`;
    if (rs.length > 0) rows.push(waitRow(label, rs));
    low = high + 1;
  }
  return rows;
}

function waitRow(label: string, rs: readonly RequestRecord[]): WaitRow {
  const queue = spread(rs.map((r) => r.phases.queue + r.phases.load));
  return {
    label,
    requests: rs.length,
    queueP50Ms: queue.p50,
    queueP99Ms: queue.p99,
    computeP50Ms: spread(rs.map((r) => r.phases.compute)).p50,
  };
}

/** Percentiles (nearest rank) and mean of µs values, in ms. */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number =>
    ms(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0);
  return {
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: ms(sorted.at(-1) ?? 0),
    mean: ms(sorted.reduce((n, v) => n + v, 0) / sorted.length),
  };
}

function ms(us: number): number {
  return Math.round(us) / 1000;
}
