import type { TraceSpan } from "./span.js";

/** The spans of one trace, with its root and each span's children in start order. */
export interface Trace {
  readonly traceId: string;
  /** The span without a parent in this trace, or the earliest span whose parent is missing. */
  readonly root: TraceSpan;
  readonly spans: readonly TraceSpan[];
  children(span: TraceSpan): readonly TraceSpan[];
  /** Spans named `name`, in start order. */
  named(name: string): readonly TraceSpan[];
}

/** Groups spans into traces; the same span received twice (a retried export) counts once. */
export function groupTraces(spans: readonly TraceSpan[]): Trace[] {
  const byTrace = new Map<string, Map<string, TraceSpan>>();
  for (const s of spans) {
    let t = byTrace.get(s.traceId);
    if (t === undefined) {
      t = new Map<string, TraceSpan>();
      byTrace.set(s.traceId, t);
    }
    t.set(s.spanId, s);
  }
  return [...byTrace.entries()].map(([traceId, byId]) => toTrace(traceId, byId));
}

function toTrace(traceId: string, byId: Map<string, TraceSpan>): Trace {
  const all = [...byId.values()].sort((a, b) => a.startUs - b.startUs);
  const kids = new Map<string, TraceSpan[]>();
  for (const s of all) {
    const list = kids.get(s.parentSpanId);
    if (list === undefined) kids.set(s.parentSpanId, [s]);
    else list.push(s);
  }
  // A span whose parent never arrived (a client's own span, a process that was not exporting)
  // still roots the part of the trace that did.
  const root =
    all.find((s) => s.parentSpanId === "") ?? all.find((s) => !byId.has(s.parentSpanId)) ?? all[0];
  if (root === undefined) throw new Error(`trace ${traceId} has no spans`);
  return {
    traceId,
    root,
    spans: all,
    children: (span) => kids.get(span.spanId) ?? [],
    named: (name) => all.filter((s) => s.name === name),
  };
}

/**
 * Whether every span of the trace reaches `root` through its parents: one connected tree,
 * not pieces that happen to share a trace id.
 */
export function isConnected(trace: Trace): boolean {
  const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
  return trace.spans.every((s) => {
    let at: TraceSpan | undefined = s;
    for (let hops = 0; at !== undefined && hops <= trace.spans.length; hops++) {
      if (at.spanId === trace.root.spanId) return true;
      at = byId.get(at.parentSpanId);
    }
    return false;
  });
}
