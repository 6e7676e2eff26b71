import { randomBytes } from "node:crypto";
import { startTracing, type Tracing } from "@shoal/telemetry";
import { startOtlpCollector, type OtlpCollector } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

let collector: OtlpCollector;
let tracing: Tracing;
let cluster: TestCluster;

beforeAll(async () => {
  collector = await startOtlpCollector();
  const otlp = {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  };
  tracing = startTracing({ serviceName: "shoal-ingress", env: otlp });
  cluster = await startCluster({ env: { ...otlp, LOG_LEVEL: "debug" }, tracing });
});

afterAll(async () => {
  await cluster.stop();
  await tracing.shutdown();
  await collector.close();
});

it("records one trace across ingress (annotating in process), queue, worker and sidecar", async () => {
  const traceId = randomBytes(16).toString("hex");
  const clientSpan = randomBytes(8).toString("hex");
  const res = await fetch(`${cluster.baseUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: `00-${traceId}-${clientSpan}-01` },
    body: JSON.stringify({ model: MINILM, input: ["trace me through every hop"] }),
  });
  expect(res.status).toBe(200);

  const expected = [
    "shoal-ingress/ingress.embeddings",
    "shoal-ingress/annotate",
    "shoal-worker/queue.wait",
    "shoal-worker/worker.batch",
    "shoal-sidecar/sidecar.embed",
  ];
  const ours = () => collector.spans.filter((s) => s.traceId === traceId);
  await collector.waitFor(
    () => expected.every((e) => ours().some((s) => `${s.service}/${s.name}` === e)),
    20_000,
  );
  const byName = new Map(ours().map((s) => [s.name, s]));
  const ingress = byName.get("ingress.embeddings");
  const annotate = byName.get("annotate");
  const batch = byName.get("worker.batch");
  expect(ingress?.parentSpanId).toBe(clientSpan);
  expect(annotate?.parentSpanId).toBe(ingress?.spanId);
  expect(byName.get("queue.wait")?.parentSpanId).toBe(annotate?.spanId);
  expect(batch?.parentSpanId).toBe(annotate?.spanId);
  expect(byName.get("sidecar.embed")?.parentSpanId).toBe(batch?.spanId);

  // The worker's JSON logs carry the same trace id.
  await new Promise((r) => setTimeout(r, 200));
  const logged = cluster.worker
    .output()
    .split("\n")
    .some((line) => line.includes(`"trace_id":"${traceId}"`) && line.includes("part answered"));
  expect(logged).toBe(true);
});
