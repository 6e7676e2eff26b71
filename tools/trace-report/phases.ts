import type { Trace, TraceSpan } from "@shoal/traces";

/**
 * Where a request's time goes, in the order a request meets them. `other` is what no span of
 * a phase covers: ingress parsing and answering, NATS hops, gaps between processes.
 */
export const PHASES = [
  "annotate",
  "offload",
  "queue",
  "load",
  "adapter",
  "batch",
  "compute",
  "other",
] as const;
export type Phase = (typeof PHASES)[number];

/**
 * When spans of several phases overlap, the instant counts for the one that explains it best:
 * computing beats waiting for the batch around it, a model load beats the queue wait it
 * caused, and so on. Higher wins.
 */
const PRIORITY: Record<Phase, number> = {
  compute: 7,
  adapter: 6,
  load: 5,
  offload: 4,
  annotate: 3,
  batch: 2,
  queue: 1,
  other: 0,
};

const BY_NAME: Readonly<Record<string, Phase>> = {
  annotate: "annotate",
  "blob.offload": "offload",
  "offloader.upload": "offload",
  "blob.fetch": "offload",
  "queue.wait": "queue",
  "queue.put_back": "queue",
  "model.load": "load",
  "adapter.ensure": "adapter",
  "adapter.fetch": "adapter",
  "sidecar.load_adapter": "adapter",
  "worker.batch": "batch",
  "worker.generate": "batch",
};

/** The phase a span's time belongs to. */
export function phaseOf(span: TraceSpan): Phase {
  const named = BY_NAME[span.name];
  if (named !== undefined) return named;
  // The sidecar's batch and generation spans (embed, score, classify, extract, generate,
  // decode steps); its load, health and stats spans are not compute.
  if (span.service === "shoal-sidecar" && !/\.(load|unload|health|stats|cancel)/.test(span.name)) {
    return "compute";
  }
  return "other";
}

/** A stretch of the request's time line spent in one phase, under one span. */
export interface Segment {
  readonly phase: Phase;
  /** `service/span` the time is attributed to (the root's own time: its name). */
  readonly span: string;
  readonly startUs: number;
  readonly us: number;
}

export interface Breakdown {
  readonly totalUs: number;
  /** Exclusive time per phase: the phases sum to the total. */
  readonly phases: Readonly<Record<Phase, number>>;
  /** The request's time line, consecutive stretches of one span merged: its critical path. */
  readonly timeline: readonly Segment[];
}

/**
 * Splits the root span's time among the trace's spans: each instant goes to the highest
 * priority phase with a span open then (the latest started among equals). Spans of other
 * processes are in the same clock only as far as the hosts' clocks agree; everything is
 * clipped to the root, so a skewed span cannot make the phases exceed the total.
 */
export function breakdown(trace: Trace): Breakdown {
  const root = trace.root;
  const spans = trace.spans.filter((s) => s !== root && s.endUs > s.startUs);
  const cuts = new Set<number>([root.startUs, root.endUs]);
  for (const s of spans) {
    if (s.startUs > root.startUs && s.startUs < root.endUs) cuts.add(s.startUs);
    if (s.endUs > root.startUs && s.endUs < root.endUs) cuts.add(s.endUs);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const phases = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
  const timeline: Segment[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const from = points[i] ?? 0;
    const to = points[i + 1] ?? 0;
    let best: TraceSpan | undefined;
    let bestPhase: Phase = "other";
    for (const s of spans) {
      if (s.startUs > from || s.endUs < to) continue;
      const phase = phaseOf(s);
      if (
        best === undefined ||
        PRIORITY[phase] > PRIORITY[bestPhase] ||
        (PRIORITY[phase] === PRIORITY[bestPhase] && s.startUs > best.startUs)
      ) {
        best = s;
        bestPhase = phase;
      }
    }
    const label =
      best === undefined ? `${root.service}/${root.name}` : `${best.service}/${best.name}`;
    const phase = best === undefined ? "other" : bestPhase;
    phases[phase] += to - from;
    const last = timeline.at(-1);
    if (last !== undefined && last.span === label && last.phase === phase) {
      timeline[timeline.length - 1] = { ...last, us: last.us + (to - from) };
    } else {
      timeline.push({ phase, span: label, startUs: from, us: to - from });
    }
  }
  return { totalUs: root.endUs - root.startUs, phases, timeline };
}
