import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { DEAD_LETTER_STREAM, workSubject } from "@shoal/jetstream";
import {
  ErrorCode,
  WorkBundleSchema,
  WorkItemSchema,
  WorkResultsSchema,
  type WorkItem,
  type WorkResult,
} from "@shoal/proto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

// Work messages that carry several requests' items, as a gateway under load queues them,
// published straight to the stream: the worker answers each item on its own (its request, its
// reply subject, its deadline) and acks the message once, after all of them.

let pipeline: Pipeline;
let answers: Subscription;
const received: { subject: string; result: WorkResult }[] = [];

beforeAll(async () => {
  pipeline = await startPipeline();
  answers = pipeline.nc.subscribe("shoal.reply.v1.>", {
    callback: (_err, msg) => {
      for (const result of fromBinary(WorkResultsSchema, msg.data).results) {
        received.push({ subject: msg.subject, result });
      }
    },
  });
  await pipeline.startWorker("bundles", { SHOAL_SIDECAR_BACKEND: "sim" });
}, 120_000);

afterAll(async () => {
  answers.unsubscribe();
  await pipeline.stop();
});

function item(requestId: string, inputs: string[], deadlineMs: number, ingress: string): WorkItem {
  return create(WorkItemSchema, {
    requestId,
    part: 0,
    parts: 1,
    model: MINILM,
    deadlineUnixMs: BigInt(Date.now() + deadlineMs),
    replySubject: `shoal.reply.v1.bundle-${ingress}`,
    maxInputTokens: 8,
    totalTokens: 8 * inputs.length,
    task: { case: "embed", value: { inputs, truncate: true } },
  });
}

it("answers every item of a message to its own ingress, an expired one with DEADLINE_EXCEEDED, and acks once", async () => {
  const bundle = create(WorkBundleSchema, {
    items: [
      item("two-inputs", ["first of two", "second of two"], 60_000, "a"),
      item("expired", ["too late"], -1_000, "a"),
      item("elsewhere", ["for the other ingress"], 60_000, "b"),
    ],
  });
  await jetstream(pipeline.nc).publish(
    workSubject("all-minilm-l6-v2", 16),
    toBinary(WorkBundleSchema, bundle),
  );
  await expect.poll(() => received.length, { timeout: 30_000 }).toBe(3);
  const byId = new Map(received.map((r) => [r.result.requestId, r]));
  const two = byId.get("two-inputs");
  expect(two?.subject).toBe("shoal.reply.v1.bundle-a");
  expect(two?.result.outcome.case).toBe("embed");
  if (two?.result.outcome.case === "embed") {
    expect(two.result.outcome.value.tokens).toHaveLength(2);
    expect(two.result.outcome.value.embeddings.byteLength).toBe(2 * 384 * 4);
  }
  expect(byId.get("elsewhere")?.subject).toBe("shoal.reply.v1.bundle-b");
  expect(byId.get("elsewhere")?.result.outcome.case).toBe("embed");
  expect(byId.get("expired")?.result.outcome).toMatchObject({
    case: "error",
    value: { code: ErrorCode.DEADLINE_EXCEEDED },
  });
  await expect
    .poll(async () => {
      const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
      return info.num_pending + info.num_ack_pending;
    })
    .toBe(0);
  const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
  expect(info.num_redelivered).toBe(0);
});

it("dead-letters a message whose items are not all work it can run, and answers none of them", async () => {
  const before = received.length;
  const generate = create(WorkItemSchema, {
    requestId: "not-here",
    model: MINILM,
    replySubject: "shoal.reply.v1.bundle-a",
    task: { case: "generate", value: { input: { case: "prompt", value: "hi" }, n: 1 } },
  });
  const bundle = create(WorkBundleSchema, {
    items: [item("beside-poison", ["fine"], 60_000, "a"), generate],
  });
  await jetstream(pipeline.nc).publish(
    workSubject("all-minilm-l6-v2", 16),
    toBinary(WorkBundleSchema, bundle),
  );
  await expect
    .poll(async () => (await pipeline.jsm.streams.info(DEAD_LETTER_STREAM)).state.messages, {
      timeout: 30_000,
    })
    .toBe(1);
  expect(received.length).toBe(before);
});
