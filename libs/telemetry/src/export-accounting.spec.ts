import { createServer } from "node:net";
import { Registry } from "prom-client";
import { afterEach, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { startTracing, type Tracing } from "./tracing.js";

// A trace backend that is down: spans still end at once on the request path, and what is lost
// on the way out is counted, as queue_full (the bounded export queue overflowed) and
// export_failed (batches the backend never took).

let tracing: Tracing | undefined;

afterEach(async () => {
  await tracing?.shutdown();
  tracing = undefined;
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function counter(registry: Registry, reason: string): Promise<number> {
  const metric = await registry.getSingleMetric("shoal_trace_spans_dropped_total")?.get();
  return metric?.values.find((v) => v.labels["reason"] === reason)?.value ?? 0;
}

it("counts spans dropped when the backend is down, without holding up the spans' callers", async () => {
  const registry = new Registry();
  const lines: string[] = [];
  const logger = createLogger({
    service: "test",
    level: "warn",
    destination: { write: (l: string) => lines.push(l) },
  });
  tracing = startTracing({
    serviceName: "test",
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      OTEL_TRACES_SAMPLER: "always_on",
    },
    logger,
    metrics: registry,
  });
  const tracer = tracing.tracer;
  // More than the export queue holds (2,048), ended faster than any export could take them.
  for (let i = 0; i < 3_000; i++) tracer.startSpan(`span ${i}`).end();
  // The processor reports its drops when the next span fits again, after a failed export.
  await expect
    .poll(
      async () => {
        tracer.startSpan("probe").end();
        return [await counter(registry, "queue_full"), await counter(registry, "export_failed")];
      },
      { timeout: 30_000, interval: 200 },
    )
    .toSatisfy(
      ([full = 0, failed = 0]: number[]) => full > 0 && failed > 0 && full + failed >= 3_000,
    );
  expect(lines.some((l) => l.includes("spans dropped"))).toBe(true);
}, 40_000);
