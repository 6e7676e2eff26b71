import { describe, expect, it } from "vitest";
import { ingressReading, INGRESS_FAMILIES, LatencyWindow } from "./latency.js";
import { parsePromText } from "./prom-text.js";

/** An ingress metrics page with `n[i]` requests in bucket `le[i]` (cumulative). */
function page(cumulative: readonly number[], arrivals: number): string {
  const edges = ["0.001", "0.01", "0.1", "1", "+Inf"];
  const lines = edges.map(
    (le, i) =>
      `shoal_ingress_request_duration_seconds_bucket{route="embeddings",model="org/a",le="${le}"} ${cumulative[i] ?? 0}`,
  );
  return [
    "# HELP shoal_ingress_request_duration_seconds Time",
    "# TYPE shoal_ingress_request_duration_seconds histogram",
    ...lines,
    `shoal_ingress_request_phase_seconds_bucket{route="embeddings",model="org/a",phase="queue",le="+Inf"} ${cumulative.at(-1) ?? 0}`,
    `shoal_queue_arrivals_total{model="a",bucket="16"} ${arrivals}`,
    `shoal_queue_arrivals_total{model="a",bucket="64"} ${arrivals}`,
    "process_cpu_seconds_total 3",
  ].join("\n");
}

describe("parsePromText", () => {
  it("reads the families asked for, with escaped label values, and skips what does not parse", () => {
    const samples = parsePromText(
      [
        'a_total{x="q\\"uote\\\\",y="new\\nline"} 4 1700000000',
        "a_total 5",
        'a_total{x="unterminated} 1',
        "a_total{} NaN",
        "b_total 1",
        "garbage",
      ].join("\n"),
      ["a_"],
    );
    expect(samples).toEqual([
      { name: "a_total", labels: { x: 'q"uote\\', y: "new\nline" }, value: 4 },
      { name: "a_total", labels: {}, value: 5 },
    ]);
  });
});

describe("LatencyWindow", () => {
  it("reads percentiles from the window's bucket differences, and arrival rates", () => {
    const w = new LatencyWindow(60_000);
    w.add(ingressReading(0, parsePromText(page([0, 10, 10, 10, 10], 100), INGRESS_FAMILIES)));
    // 100 more requests: 30 under 10 ms, 60 more under 100 ms, 9 under 1 s, 1 over.
    w.add(
      ingressReading(2_000, parsePromText(page([0, 40, 100, 109, 110], 140), INGRESS_FAMILIES)),
    );
    const total = w.phases().find((p) => p.phase === "total");
    // The 50th request is the 20th of the 60 in (10, 100] ms: a third of the way, 40 ms.
    expect(total?.p50Ms).toBeCloseTo(40, 9);
    expect(total).toMatchObject({ phase: "total", count: 100, p90Ms: 100, p99Ms: 1000 });
    expect(w.models()).toMatchObject([{ model: "org/a", count: 100, p90Ms: 100 }]);
    expect(w.phases().find((p) => p.phase === "compute")).toEqual({ phase: "compute", count: 0 });
    expect(w.arrivalsPerS("a")).toBe(40);
    expect(w.spanS()).toBe(2);
  });

  it("answers the largest finite edge for requests past the last bucket", () => {
    const w = new LatencyWindow(60_000);
    w.add(ingressReading(0, parsePromText(page([0, 0, 0, 0, 0], 0), INGRESS_FAMILIES)));
    w.add(ingressReading(1_000, parsePromText(page([0, 0, 0, 0, 10], 0), INGRESS_FAMILIES)));
    expect(w.phases().find((p) => p.phase === "total")).toMatchObject({ count: 10, p50Ms: 1000 });
  });

  it("starts again when an ingress restarted (its counters went back)", () => {
    const w = new LatencyWindow(60_000);
    w.add(ingressReading(0, parsePromText(page([0, 50, 50, 50, 50], 9), INGRESS_FAMILIES)));
    w.add(ingressReading(1_000, parsePromText(page([0, 1, 1, 1, 1], 1), INGRESS_FAMILIES)));
    expect(w.phases().find((p) => p.phase === "total")?.count).toBe(0);
    expect(w.spanS()).toBe(0);
  });

  it("keeps only the window's readings", () => {
    const w = new LatencyWindow(5_000);
    for (let t = 0; t <= 20_000; t += 1_000) {
      w.add(ingressReading(t, parsePromText(page([0, t, t, t, t], 0), INGRESS_FAMILIES)));
    }
    expect(w.spanS()).toBe(5);
    expect(w.phases().find((p) => p.phase === "total")?.count).toBe(5_000);
  });
});
