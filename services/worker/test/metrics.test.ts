import { ROOT_CONTEXT } from "@opentelemetry/api";
import { freePort, scrapeMetrics } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

// The worker's own metrics, scraped from its /metrics port (SHOAL_METRICS_PORT) the way
// Prometheus does, while it serves MiniLM on the real sidecar: the counts must be the work it
// was given, exactly.

let pipeline: Pipeline;
let port: number;

beforeAll(async () => {
  pipeline = await startPipeline();
  port = await freePort();
});

afterAll(async () => {
  await pipeline.stop();
});

const model = 'model="all-minilm-l6-v2"';

it("counts batches, inputs and expired items as the worker and its sidecar ran them", async () => {
  // Queued before any worker runs, with a deadline it outlives there.
  const late = pipeline.gateway
    .embed({ model: MINILM, inputs: ["too late"], timeoutMs: 300 }, ROOT_CONTEXT)
    .catch((e: unknown) => (e as { kind?: string }).kind);
  expect(await late).toBe("deadline_exceeded");
  await pipeline.startWorker("measured", { SHOAL_METRICS_PORT: String(port) });
  await expect
    .poll(async () => {
      const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
      return info.num_pending + info.num_ack_pending;
    })
    .toBe(0);

  const requests = [["a", "b"], ["c"], ["d", "e", "f", "g"]];
  for (const inputs of requests) {
    await pipeline.gateway.embed({ model: MINILM, inputs }, ROOT_CONTEXT);
  }
  const samples = await scrapeMetrics(port);
  expect(samples.get(`shoal_worker_expired_items_total{${model}}`)).toBe(1);
  expect(samples.get(`shoal_worker_batch_inputs_sum{${model}}`)).toBe(7);
  const batches = samples.get(`shoal_worker_batches_total{${model},outcome="ok"}`) ?? 0;
  expect(batches).toBeGreaterThanOrEqual(1);
  expect(samples.get(`shoal_worker_batch_inputs_count{${model}}`)).toBe(batches);
  expect(samples.get(`shoal_worker_batch_compute_seconds_count{${model}}`)).toBe(batches);
  expect(samples.get(`shoal_worker_batch_compute_seconds_sum{${model}}`)).toBeGreaterThan(0);
  expect(samples.get(`shoal_worker_batches_total{${model},outcome="failed"}`) ?? 0).toBe(0);
  // The sidecar's own counters, read with `stats` when scraped: the 7 inputs, not the expired one.
  expect(samples.get(`shoal_sidecar_items_total{${model}}`)).toBe(7);
  expect(samples.get(`shoal_sidecar_batches_total{${model}}`)).toBe(batches);
  expect(samples.get(`shoal_sidecar_busy_seconds_total{${model}}`)).toBeGreaterThan(0);
  expect(samples.get(`shoal_sidecar_model_memory_bytes{${model}}`)).toBeGreaterThan(50_000_000);
  // The process's own, from the standard collectors.
  expect(samples.get("process_cpu_seconds_total")).toBeGreaterThan(0);
}, 120_000);
