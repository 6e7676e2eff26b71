import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InferenceService } from "@shoal/proto";
import {
  createLogger,
  createMetricsRegistry,
  serveMetrics,
  type MetricsServer,
} from "@shoal/telemetry";
import { scrapeMetrics } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

// Ingress's request metrics, scraped over HTTP as Prometheus scrapes them, after a known mix
// of requests through REST and gRPC against the real cluster: every count is exact.

let cluster: TestCluster;
let metrics: MetricsServer;

beforeAll(async () => {
  const registry = createMetricsRegistry();
  cluster = await startCluster({ metrics: registry });
  metrics = await serveMetrics({
    registry,
    port: 0,
    logger: createLogger({ service: "test", level: "silent" }),
  });
}, 120_000);

afterAll(async () => {
  await metrics.close();
  await cluster.stop();
});

function embed(body: object): Promise<Response> {
  return fetch(`${cluster.baseUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MINILM, ...body }),
  });
}

it("counts each request once under its route, model and outcome, with its phases", async () => {
  expect((await embed({ input: ["one"] })).status).toBe(200);
  expect((await embed({ input: ["two", "three"] })).status).toBe(200);
  // Refused by the model after it was queued: counted with its error kind.
  const long = await embed({ input: ["word ".repeat(400)], truncate: false });
  expect(long.status).toBe(400);
  const client = createClient(InferenceService, createGrpcTransport({ baseUrl: cluster.baseUrl }));
  expect((await client.embed({ model: MINILM, inputs: ["over gRPC"] })).embeddings).toHaveLength(1);

  const samples = await scrapeMetrics(metrics.port);
  const at = (labels: string) => samples.get(labels) ?? 0;
  const model = `model="${MINILM}"`;
  expect(at(`shoal_ingress_requests_total{route="embeddings",${model},outcome="ok"}`)).toBe(2);
  expect(
    at(`shoal_ingress_requests_total{route="embeddings",${model},outcome="invalid_argument"}`),
  ).toBe(1);
  expect(at(`shoal_ingress_requests_total{route="Embed",${model},outcome="ok"}`)).toBe(1);
  expect(at(`shoal_ingress_request_duration_seconds_count{route="embeddings",${model}}`)).toBe(3);
  expect(
    at(`shoal_ingress_request_phase_seconds_count{route="embeddings",${model},phase="compute"}`),
  ).toBe(2);
  expect(
    at(`shoal_ingress_request_phase_seconds_sum{route="embeddings",${model},phase="compute"}`),
  ).toBeGreaterThan(0);
  expect(at(`shoal_ingress_in_flight_requests{route="embeddings"}`)).toBe(0);
  // Every request was one work item; MiniLM's default buckets close at 16 and 256 tokens.
  const arrivals = [...samples.entries()]
    .filter(([name]) => name.startsWith(`shoal_queue_arrivals_total{model="all-minilm-l6-v2",`))
    .reduce((n, [, v]) => n + v, 0);
  expect(arrivals).toBe(4);
  expect(at('shoal_queue_arrivals_total{model="all-minilm-l6-v2",bucket="256"}')).toBe(1);
});

it("counts refused requests once each, and never a client's model name the catalog lacks", async () => {
  const post = (path: string, body: string, method = "POST") =>
    fetch(`${cluster.baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(method === "GET" ? {} : { body }),
    });
  expect((await post("/v1/embeddings", '{"model": ')).status).toBe(400);
  expect((await embed({ model: "no/such-model-1", input: ["x"] })).status).toBe(404);
  expect((await embed({ model: "no/such-model-2", input: ["x"] })).status).toBe(404);
  expect((await post("/v1/nowhere", "{}")).status).toBe(404);
  expect((await post("/v1/embeddings", "", "GET")).status).toBe(405);
  const client = createClient(InferenceService, createGrpcTransport({ baseUrl: cluster.baseUrl }));
  await expect(client.embed({ model: "no/such-model-3", inputs: ["x"] })).rejects.toThrow();

  const samples = await scrapeMetrics(metrics.port);
  const at = (labels: string) => samples.get(labels) ?? 0;
  const unknown = 'model="unknown"';
  expect(
    at(`shoal_ingress_requests_total{route="embeddings",${unknown},outcome="invalid_argument"}`),
  ).toBe(1);
  expect(
    at(`shoal_ingress_requests_total{route="embeddings",${unknown},outcome="not_found"}`),
  ).toBe(2);
  expect(at(`shoal_ingress_requests_total{route="unknown",${unknown},outcome="not_found"}`)).toBe(
    1,
  );
  expect(
    at(`shoal_ingress_requests_total{route="embeddings",${unknown},outcome="method_not_allowed"}`),
  ).toBe(1);
  expect(at(`shoal_ingress_requests_total{route="Embed",${unknown},outcome="not_found"}`)).toBe(1);
  expect([...samples.keys()].some((k) => k.includes("no/such-model"))).toBe(false);
});

it("shows the queue growing while the worker is paused, and draining after", async () => {
  const model = 'model="all-minilm-l6-v2"';
  const queued = async () => {
    const samples = await scrapeMetrics(metrics.port);
    return (
      (samples.get(`shoal_queue_pending_messages{${model}}`) ?? 0) +
      (samples.get(`shoal_queue_held_messages{${model}}`) ?? 0)
    );
  };
  expect(await queued()).toBe(0);
  cluster.worker.kill("SIGSTOP");
  let answers: Promise<Response[]>;
  try {
    answers = Promise.all([embed({ input: ["paused a"] }), embed({ input: ["paused b"] })]);
    await expect.poll(queued, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    // The oldest unfinished work ages while nothing takes it.
    const age = async () =>
      (await scrapeMetrics(metrics.port)).get(`shoal_queue_oldest_message_age_seconds{${model}}`) ??
      0;
    await expect.poll(age, { timeout: 10_000 }).toBeGreaterThanOrEqual(0.5);
  } finally {
    cluster.worker.kill("SIGCONT");
  }
  for (const res of await answers) expect(res.status).toBe(200);
  await expect.poll(queued, { timeout: 10_000 }).toBe(0);
  // Nothing unfinished: no age at all.
  expect(
    (await scrapeMetrics(metrics.port)).has(`shoal_queue_oldest_message_age_seconds{${model}}`),
  ).toBe(false);
});
