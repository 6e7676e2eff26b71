import { ROOT_CONTEXT } from "@opentelemetry/api";
import type { EmbedOutcome } from "@shoal/gateway";
import type { ServiceHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, mostBatchesInFlight, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

let worker: ServiceHandle;

beforeAll(async () => {
  pipeline = await startPipeline();
  worker = await pipeline.startWorker("prefetching", {
    SHOAL_BATCHES_IN_FLIGHT: "2",
    SHOAL_BATCH_MAX_INPUTS: "4",
    // One model thread (no bundle), so the second batch in flight is the prefetch alone.
    SHOAL_BUNDLE: "none",
    // "batch started" and "batch answered", with their times, show the batches overlap.
    LOG_LEVEL: "debug",
  });
});

afterAll(async () => {
  await pipeline.stop();
});

function row(o: EmbedOutcome, i: number): Float32Array {
  const start = o.embeddings.byteOffset + i * o.dim * 4;
  return new Float32Array(o.embeddings.buffer.slice(start, start + o.dim * 4));
}

it("answers every request correctly with two batches in flight", async () => {
  const texts = Array.from(
    { length: 40 },
    (_, i) => `prefetch ${i}: ${"the next batch waits in the sidecar ".repeat(1 + (i % 4))}`,
  );
  const outcomes = await Promise.all(
    texts.map((text) => pipeline.gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT)),
  );
  const together = await pipeline.gateway.embed({ model: MINILM, inputs: texts }, ROOT_CONTEXT);
  outcomes.forEach((outcome, i) => {
    const a = row(outcome, 0);
    const b = row(together, i);
    expect(
      a.reduce((dot, x, k) => dot + x * (b[k] ?? 0), 0),
      `request ${i}`,
    ).toBeGreaterThanOrEqual(0.9999);
  });
  expect(pipeline.gateway.duplicateAnswers).toBe(0);
  // The next batch really was handed over while the one before it still ran: with one batch
  // in flight a batch starts only after the one before it was answered.
  expect(mostBatchesInFlight(worker.output())).toBe(2);
}, 120_000);
