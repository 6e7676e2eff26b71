import { describe, expect, it } from "vitest";
import { spansFromOtlpJson } from "./otlp-json.js";
import { groupTraces, isConnected } from "./trace.js";

const T = "0af7651916cd43dd8448eb211c80319c";

function span(spanId: string, parentSpanId: string, name: string, startMs: number, endMs: number) {
  return {
    traceId: T.toUpperCase(),
    spanId,
    parentSpanId,
    name,
    startTimeUnixNano: String(BigInt(startMs) * 1_000_000n),
    endTimeUnixNano: String(BigInt(endMs) * 1_000_000n),
  };
}

function doc(service: string, spans: object[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: service } }] },
        scopeSpans: [{ spans }],
      },
    ],
  };
}

describe("spansFromOtlpJson", () => {
  it("reads ids, times in µs, attributes of every type, error status and links", () => {
    const [s] = spansFromOtlpJson(
      doc("shoal-worker", [
        {
          ...span("00f067aa0ba902b7", "", "worker.batch", 1_700_000_000_000, 1_700_000_000_250),
          attributes: [
            { key: "shoal.batch_items", value: { intValue: "12" } },
            { key: "shoal.model", value: { stringValue: "minilm" } },
            { key: "shoal.fill", value: { doubleValue: 0.5 } },
            { key: "shoal.local", value: { boolValue: true } },
          ],
          status: { code: 2, message: "boom" },
          links: [{ traceId: "AB".repeat(16), spanId: "CD".repeat(8) }],
        },
      ]),
    );
    expect(s).toMatchObject({
      traceId: T,
      service: "shoal-worker",
      startUs: 1_700_000_000_000_000,
      endUs: 1_700_000_000_250_000,
      attributes: {
        "shoal.batch_items": 12,
        "shoal.model": "minilm",
        "shoal.fill": 0.5,
        "shoal.local": true,
      },
      error: true,
      links: [{ traceId: "ab".repeat(16), spanId: "cd".repeat(8) }],
    });
  });

  it("skips spans without ids or times instead of guessing, and tolerates empty documents", () => {
    const spans = spansFromOtlpJson(
      doc("x", [
        { name: "no ids", startTimeUnixNano: "1", endTimeUnixNano: "2" },
        { ...span("00f067aa0ba902b7", "", "bad time", 0, 1), startTimeUnixNano: "soon" },
        span("00f067aa0ba902b8", "", "good", 0, 1),
      ]),
    );
    expect(spans.map((s) => s.name)).toEqual(["good"]);
    expect(spansFromOtlpJson({})).toEqual([]);
    expect(spansFromOtlpJson({ resourceSpans: [{}] })).toEqual([]);
  });
});

describe("groupTraces", () => {
  it("finds the root, children in start order, and whether the tree is connected", () => {
    const spans = spansFromOtlpJson(
      doc("s", [
        span("0000000000000003", "0000000000000001", "late child", 20, 30),
        span("0000000000000001", "", "root", 0, 40),
        span("0000000000000002", "0000000000000001", "early child", 5, 10),
        span("0000000000000002", "0000000000000001", "early child", 5, 10),
      ]),
    );
    const [trace] = groupTraces(spans);
    expect(trace?.root.name).toBe("root");
    expect(trace?.spans).toHaveLength(3);
    expect(trace?.children(trace.root).map((s) => s.name)).toEqual(["early child", "late child"]);
    expect(trace !== undefined && isConnected(trace)).toBe(true);

    const broken = spansFromOtlpJson(
      doc("s", [
        span("0000000000000001", "", "root", 0, 40),
        span("0000000000000009", "00000000000000ff", "orphan", 5, 10),
      ]),
    );
    const [pieces] = groupTraces(broken);
    expect(pieces !== undefined && isConnected(pieces)).toBe(false);
  });

  it("roots a trace whose client span was never exported at the earliest span missing its parent", () => {
    const spans = spansFromOtlpJson(
      doc("s", [
        span("0000000000000002", "0000000000000001", "child", 5, 10),
        span("0000000000000001", "00000000000000cc", "ingress", 0, 40),
      ]),
    );
    const [trace] = groupTraces(spans);
    expect(trace?.root.name).toBe("ingress");
    expect(trace !== undefined && isConnected(trace)).toBe(true);
  });
});
