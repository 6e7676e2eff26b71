import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { extractContext, injectContext, traceIdOf, traceparentOf } from "./propagation.js";
import { startTracing } from "./tracing.js";

const tracing = startTracing({ serviceName: "test", env: {} });
afterAll(() => tracing.shutdown());

function mapCarrier(map: Map<string, string>) {
  return { get: (k: string) => map.get(k), set: (k: string, v: string) => void map.set(k, v) };
}

describe("W3C propagation", () => {
  it("round-trips a span context through a carrier", () => {
    const span = tracing.tracer.startSpan("parent");
    const ctx = trace.setSpan(ROOT_CONTEXT, span);
    const headers = new Map<string, string>();
    injectContext(ctx, mapCarrier(headers));
    const traceparent = headers.get("traceparent");
    // Nothing receives this tracing's spans, so they are not sampled (flags 00); the ids
    // travel all the same.
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(traceparentOf(ctx)).toBe(traceparent);
    const extracted = extractContext(mapCarrier(headers));
    expect(traceIdOf(extracted)).toBe(span.spanContext().traceId);
    span.end();
  });

  it("yields no trace for a carrier without context or with a malformed one", () => {
    expect(traceIdOf(extractContext(mapCarrier(new Map())))).toBeUndefined();
    const bad = new Map([["traceparent", "00-not-a-trace-01"]]);
    expect(traceIdOf(extractContext(mapCarrier(bad)))).toBeUndefined();
  });
});

describe("startTracing", () => {
  it("refuses an OTLP protocol it cannot speak", () => {
    expect(() =>
      startTracing({
        serviceName: "x",
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1",
          OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        },
      }),
    ).toThrow(/not supported/);
  });
});
