import { ROOT_CONTEXT } from "@opentelemetry/api";
import { simEmbeddingEntry, type ServiceHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { mostBatchesInFlight, startPipeline, type Pipeline } from "./support.js";

/**
 * Two simulated models on one worker whose sidecar is one shared device: with device turns
 * (`SHOAL_WORKER_DEVICE_BATCHES=1`) the worker hands the device one batch at a time whichever
 * model it is for; without, both models' batches are handed over at once and queue on the
 * device.
 */
let pipeline: Pipeline;

const models = ["sim/left", "sim/right"];

beforeAll(async () => {
  pipeline = await startPipeline({
    partMaxInputs: 1,
    catalogDocument: {
      models: models.map((id) =>
        simEmbeddingEntry(id, id.slice(4), { fixedUs: 40_000, perPaddedTokenNs: 0 }),
      ),
    },
  });
}, 60_000);

afterAll(async () => {
  await pipeline.stop();
});

async function startWorker(id: string, turns: boolean): Promise<ServiceHandle> {
  return pipeline.startWorker(id, {
    SHOAL_WORKER_MODELS: models.join(","),
    SHOAL_SIDECAR_BACKEND: "sim",
    SHOAL_SIDECAR_SIM_DEVICE: "shared",
    SHOAL_BUNDLE: "none",
    SHOAL_BATCH_MAX_INPUTS: "4",
    ...(turns ? { SHOAL_WORKER_DEVICE_BATCHES: "1" } : {}),
    // "batch started" and "batch answered", with their times, show which batches overlap.
    LOG_LEVEL: "debug",
  });
}

/** 24 single-input requests, alternating between the models, all at once; every one answered. */
async function load(): Promise<void> {
  const outcomes = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      pipeline.gateway.embed(
        { model: models[i % 2] as string, inputs: [`turn ${i}`] },
        ROOT_CONTEXT,
      ),
    ),
  );
  for (const o of outcomes) expect(o.dim).toBe(384);
}

it("without turns, both models' batches are on the device at once", async () => {
  const worker = await startWorker("no-turns", false);
  await load();
  expect(mostBatchesInFlight(worker.output())).toBe(2);
  await worker.stop();
}, 120_000);

it("with turns, the device gets one batch at a time and every request is answered", async () => {
  const worker = await startWorker("turns", true);
  await load();
  expect(mostBatchesInFlight(worker.output())).toBe(1);
  expect(pipeline.gateway.duplicateAnswers).toBe(0);
}, 120_000);
