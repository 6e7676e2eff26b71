import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { workSubject } from "@shoal/jetstream";
import { WorkBundleSchema, WorkItemSchema, WorkResultsSchema, type WorkResult } from "@shoal/proto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;
let answers: Subscription;
let received: WorkResult[];
const REPLY = "shoal.reply.v1.sizing";

beforeEach(async () => {
  pipeline = await startPipeline();
  received = [];
  answers = pipeline.nc.subscribe(REPLY, {
    callback: (_err, msg) => {
      received.push(...fromBinary(WorkResultsSchema, msg.data).results);
    },
  });
});

afterEach(async () => {
  answers.unsubscribe();
  await pipeline.stop();
});

/** Queues `n` one-input items before any worker runs, so the worker finds a backlog. */
async function queueBacklog(n: number): Promise<void> {
  const js = jetstream(pipeline.nc);
  for (let i = 0; i < n; i++) {
    const item = create(WorkItemSchema, {
      requestId: `sizing-${i}`,
      part: 0,
      parts: 1,
      model: MINILM,
      deadlineUnixMs: BigInt(Date.now() + 120_000),
      replySubject: REPLY,
      maxInputTokens: 8,
      totalTokens: 8,
      task: { case: "embed", value: { inputs: [`backlog item ${i}`], truncate: true } },
    });
    await js.publish(
      workSubject("all-minilm-l6-v2", 16),
      toBinary(WorkBundleSchema, create(WorkBundleSchema, { items: [item] })),
    );
  }
}

async function drain(n: number): Promise<number> {
  const end = Date.now() + 90_000;
  while (received.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  expect(received).toHaveLength(n);
  return Math.max(...received.map((r) => r.timings?.batchItems ?? 0));
}

it.each([
  // No batch can meet a 1 ms target (the prior alone predicts more), so each runs alone.
  { targetMs: "1", atLeast: 1, atMost: 1 },
  // A generous target lets the worker batch the backlog up to the input ceiling.
  { targetMs: "10000", atLeast: 11, atMost: 32 },
])(
  "sizes batches from its latency model: target $targetMs ms",
  async ({ targetMs, atLeast, atMost }) => {
    await queueBacklog(60);
    await pipeline.startWorker(`sizing-${targetMs}`, {
      SHOAL_BATCH_TARGET_MS: targetMs,
      SHOAL_BATCH_MAX_INPUTS: "32",
    });

    const largest = await drain(60);
    expect(largest).toBeGreaterThanOrEqual(atLeast);
    expect(largest).toBeLessThanOrEqual(atMost);
  },
  120_000,
);
