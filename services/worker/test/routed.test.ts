import { ROOT_CONTEXT } from "@opentelemetry/api";
import { ROUTED_STREAM } from "@shoal/jetstream";
import { Router } from "@shoal/router";
import { createLogger } from "@shoal/telemetry";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;
let router: Router;

beforeAll(async () => {
  // One message per request, so the router's round-robin is visible request by request.
  pipeline = await startPipeline({ partMaxInputs: 1 });
  router = await Router.start({
    nc: pipeline.nc,
    policy: "round-robin",
    refreshMs: 10,
    workers: new Map([
      ["r1", ["all-minilm-l6-v2"]],
      ["r2", ["all-minilm-l6-v2"]],
    ]),
    logger: createLogger({ service: "router", level: "warn" }),
  });
  for (const id of ["r1", "r2"]) {
    await pipeline.startWorker(id, { SHOAL_SIDECAR_BACKEND: "sim", SHOAL_WORK_SOURCE: "routed" });
  }
}, 120_000);

afterAll(async () => {
  await router.stop();
  await pipeline.stop();
});

it("in routed mode a worker serves exactly the items routed to it, and every request is answered", async () => {
  const outcomes = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      pipeline.gateway.embed({ model: MINILM, inputs: [`routed item ${i}`] }, ROOT_CONTEXT),
    ),
  );
  expect(outcomes.every((o) => o.dim === 384)).toBe(true);
  expect(router.routed).toBe(20);
  // A worker acks after its answer is out, so the last acks may still be on their way.
  const deadline = Date.now() + 10_000;
  while ((await pipeline.jsm.streams.info(ROUTED_STREAM)).state.messages > 0) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 50));
  }
  // Round-robin gave each worker ten; each took them from its own consumer only.
  for (const id of ["r1", "r2"]) {
    const info = await pipeline.jsm.consumers.info(ROUTED_STREAM, `routed-${id}-all-minilm-l6-v2`);
    expect(info.num_pending).toBe(0);
    // Deliveries: its ten, plus any it put back and took again.
    expect(info.delivered.consumer_seq).toBeGreaterThanOrEqual(10);
  }
  // No worker created the shared consumer pull mode uses.
  const consumers = await pipeline.jsm.consumers.list("SHOAL_WORK").next();
  expect(consumers.map((c) => c.name)).not.toContain(MINILM_CONSUMER);
}, 120_000);
