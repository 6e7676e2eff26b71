import { groupTraces, type Trace, type TraceSpan } from "@shoal/traces";
import { describe, expect, it } from "vitest";
import { compareReports } from "./compare.js";
import { breakdown, PHASES } from "./phases.js";
import { renderText } from "./render-text.js";
import { phaseChart } from "./render-svg.js";
import { buildReport } from "./report.js";
import { requestOf } from "./request.js";

let nextSpan = 1;
/** A span of trace `t`, times in ms from 0. */
function span(
  t: string,
  name: string,
  service: string,
  parent: TraceSpan | undefined,
  fromMs: number,
  toMs: number,
  attributes: TraceSpan["attributes"] = {},
): TraceSpan {
  return {
    traceId: t.padStart(32, "0"),
    spanId: (nextSpan++).toString(16).padStart(16, "0"),
    parentSpanId: parent?.spanId ?? "",
    service,
    name,
    startUs: 1_000_000_000_000_000 + fromMs * 1000,
    endUs: 1_000_000_000_000_000 + toMs * 1000,
    attributes,
    error: false,
    links: [],
  };
}

/** An embedding request's trace: annotate, queue, (a load), batch around compute. */
function request(
  t: string,
  o: { queueMs: number; computeMs: number; loadMs?: number; items?: number },
) {
  const end = 1 + o.queueMs + 1 + o.computeMs + 1;
  const root = span(t, "ingress.embeddings", "shoal-ingress", undefined, 0, end, {
    "shoal.model": "m",
  });
  const annotate = span(t, "annotate", "shoal-ingress", root, 0.2, 1);
  const spans = [
    root,
    annotate,
    span(t, "queue.wait", "shoal-worker", annotate, 1, 1 + o.queueMs),
    ...(o.loadMs === undefined
      ? []
      : [span(t, "model.load", "shoal-worker", annotate, 1, 1 + o.loadMs)]),
  ];
  const batch = span(t, "worker.batch", "shoal-worker", annotate, 1 + o.queueMs, end - 1, {
    "shoal.batch_items": o.items ?? 1,
  });
  spans.push(
    batch,
    span(t, "sidecar.embed", "shoal-sidecar", batch, 2 + o.queueMs, 2 + o.queueMs + o.computeMs),
  );
  return spans;
}

/** The one trace `spans` make up. */
function only(spans: TraceSpan[]): Trace {
  const [trace, ...more] = groupTraces(spans);
  if (trace === undefined || more.length > 0) throw new Error("expected exactly one trace");
  return trace;
}

function records(spans: TraceSpan[]) {
  return groupTraces(spans).flatMap((t) => requestOf(t) ?? []);
}

describe("breakdown", () => {
  it("splits the root's time among phases exactly, the load taking the queue wait it caused", () => {
    const b = breakdown(only(request("a", { queueMs: 50, computeMs: 20, loadMs: 30 })));
    const sum = PHASES.reduce((n, p) => n + b.phases[p], 0);
    expect(sum).toBe(b.totalUs);
    expect(b.phases).toMatchObject({ load: 30_000, queue: 20_000, compute: 20_000, batch: 1_000 });
    expect(b.phases.annotate).toBe(800);
    expect(b.timeline.map((s) => s.phase)).toEqual([
      "other",
      "annotate",
      "load",
      "queue",
      "batch",
      "compute",
      "other",
    ]);
  });

  it("clips spans that run past the root (skewed clocks) to it", () => {
    const root = span("c", "ingress.chat", "shoal-ingress", undefined, 0, 10);
    const b = breakdown(only([root, span("c", "queue.wait", "shoal-worker", root, -5, 40)]));
    expect(b.phases.queue).toBe(10_000);
    expect(b.totalUs).toBe(10_000);
  });
});

describe("buildReport", () => {
  it("names queue wait dominant when requests wait, compute when they compute", () => {
    const window = { from: new Date(0), to: new Date() };
    const queued = records(
      ["1", "2", "3"].flatMap((t) => request(`q${t}`, { queueMs: 200, computeMs: 10 })),
    );
    expect(buildReport(queued, window).all.dominant).toBe("queue");
    const computing = records(
      ["1", "2", "3"].flatMap((t) => request(`c${t}`, { queueMs: 1, computeMs: 150 })),
    );
    const report = buildReport(computing, window);
    expect(report.all.dominant).toBe("compute");
    expect(report.models["m"]?.dominant).toBe("compute");
    expect(report.all.phases.compute.p50).toBe(150);
  });

  it("lists the slowest first, relates queue wait to batch size and residency, and leaves non-request traces out", () => {
    const spans = [
      ...request("s1", { queueMs: 5, computeMs: 5, items: 1 }),
      ...request("s2", { queueMs: 500, computeMs: 5, loadMs: 480, items: 30 }),
      span("l1", "loader.load", "shoal-model-loader", undefined, 0, 400),
    ];
    const report = buildReport(records(spans), { from: new Date(0), to: new Date() }, 1);
    expect(report.all.requests).toBe(2);
    expect(report.slowest.map((s) => s.traceId)).toEqual(["s2".padStart(32, "0")]);
    expect(report.slowest[0]?.path.map((p) => p.phase)).toContain("load");
    expect(report.queueByBatchSize.map((r) => [r.label, r.requests])).toEqual([
      ["1 input", 1],
      ["17–64 inputs", 1],
    ]);
    expect(report.queueByResidency.map((r) => [r.label, r.queueP50Ms])).toEqual([
      ["waited for a model load", 500],
      ["model already resident", 5],
    ]);
    const text = renderText(report);
    expect(text).toContain("Dominant phase: load");
    expect(text).toContain("load 480 ms (shoal-worker/model.load)");
    expect(phaseChart(report)).toMatch(/^<svg[\s\S]*<\/svg>\n$/);
  });

  it("compares two windows and names the phase that changed most", () => {
    const w = { from: new Date(0), to: new Date() };
    const before = buildReport(records(request("b", { queueMs: 5, computeMs: 20 })), w);
    const after = buildReport(records(request("a", { queueMs: 90, computeMs: 21 })), w);
    const c = compareReports(before, after);
    expect(c.biggestChange).toEqual({ phase: "queue", meanMsDelta: 85 });
    expect(c.totalMs.after.p50).toBeGreaterThan(c.totalMs.before.p50);
  });

  it("reports an empty window plainly", () => {
    expect(renderText(buildReport([], { from: new Date(0), to: new Date(1000) }))).toMatch(
      /^No request traces between/,
    );
  });
});
