import { ROOT_CONTEXT } from "@opentelemetry/api";
import type { EmbedOutcome } from "@shoal/gateway";
import type { ServiceHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

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

/**
 * The most batches the worker held handed to the sidecar and not yet answered at once, from its
 * "batch started" and "batch answered" lines (µs of its wall clock).
 */
function mostInFlight(output: string): number {
  const events = output.split("\n").flatMap((line) => {
    try {
      // Each line is prefixed with the stream it came from.
      const l = JSON.parse(line.slice(line.indexOf("{"))) as { msg?: string; at_us?: number };
      if (l.msg === "batch started") return [{ at: Number(l.at_us), step: 1 }];
      if (l.msg === "batch answered") return [{ at: Number(l.at_us), step: -1 }];
    } catch {
      // not a log line
    }
    return [];
  });
  let now = 0;
  let most = 0;
  for (const e of events.sort((a, b) => a.at - b.at || a.step - b.step)) {
    now += e.step;
    most = Math.max(most, now);
  }
  return most;
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
  expect(mostInFlight(worker.output())).toBe(2);
}, 120_000);
