import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { DEAD_LETTER_STREAM, Headers, workSubject } from "@shoal/jetstream";
import {
  ErrorCode,
  WorkBundleSchema,
  WorkItemSchema,
  WorkResultsSchema,
  type WorkResult,
} from "@shoal/proto";
import { freePort, scrapeMetrics } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;
let answers: Subscription;
const received: WorkResult[] = [];
const REPLY = "shoal.reply.v1.poisontest";
let metricsPort: number;

beforeAll(async () => {
  pipeline = await startPipeline();
  answers = pipeline.nc.subscribe(REPLY, {
    callback: (_err, msg) => {
      received.push(...fromBinary(WorkResultsSchema, msg.data).results);
    },
  });
  metricsPort = await freePort();
  await pipeline.startWorker("poisoned", {
    SHOAL_MAX_DELIVER: "3",
    SHOAL_METRICS_PORT: String(metricsPort),
  });
});

afterAll(async () => {
  answers.unsubscribe();
  await pipeline.stop();
});

async function deadLetters(): Promise<{ reason: string; deliveries: string; data: Uint8Array }[]> {
  const info = await pipeline.jsm.streams.info(DEAD_LETTER_STREAM);
  const out = [];
  for (
    let seq = info.state.first_seq;
    seq <= info.state.last_seq && info.state.messages > 0;
    seq++
  ) {
    const m = await pipeline.jsm.streams.getMessage(DEAD_LETTER_STREAM, { seq });
    if (m === null) continue;
    out.push({
      reason: m.header.get(Headers.deadReason),
      deliveries: m.header.get(Headers.deadDeliveries),
      data: m.data,
    });
  }
  return out;
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it("dead-letters a malformed item without answering anything", async () => {
  const garbage = new Uint8Array([0xff, 0x00, 0xfe]);
  await jetstream(pipeline.nc).publish(workSubject("all-minilm-l6-v2", 16), garbage);
  await until(
    async () => (await deadLetters()).some((d) => d.reason === "malformed work item"),
    20_000,
  );
  const dead = (await deadLetters()).find((d) => d.reason === "malformed work item");
  expect(dead?.data).toEqual(garbage);
});

it("answers a poison item with its cause after max deliveries and dead-letters it", async () => {
  // More inputs than the sidecar takes in one batch (1024): every attempt fails in the sidecar.
  const item = create(WorkItemSchema, {
    requestId: "poison-1",
    part: 0,
    parts: 1,
    model: MINILM,
    deadlineUnixMs: BigInt(Date.now() + 60_000),
    replySubject: REPLY,
    maxInputTokens: 3,
    totalTokens: 3 * 1500,
    task: {
      case: "embed",
      value: { inputs: Array.from({ length: 1500 }, (_, i) => `x${i}`), truncate: true },
    },
  });
  await jetstream(pipeline.nc).publish(
    workSubject("all-minilm-l6-v2", 16),
    toBinary(WorkBundleSchema, create(WorkBundleSchema, { items: [item] })),
  );
  await until(() => Promise.resolve(received.some((r) => r.requestId === "poison-1")), 30_000);
  const answer = received.find((r) => r.requestId === "poison-1");
  expect(answer?.outcome.case).toBe("error");
  const error = answer?.outcome.value as { code: ErrorCode; message: string };
  expect(error.code).toBe(ErrorCode.INTERNAL);
  expect(error.message).toMatch(/bad_request/);
  await until(async () => (await deadLetters()).some((d) => d.reason === error.message), 10_000);
  const dead = (await deadLetters()).find((d) => d.reason === error.message);
  expect(dead?.deliveries).toBe("3");
  expect(
    fromBinary(WorkBundleSchema, dead?.data ?? new Uint8Array()).items.map((i) => i.requestId),
  ).toEqual(["poison-1"]);
  expect(received.filter((r) => r.requestId === "poison-1")).toHaveLength(1);
});

it("counts what it dead-lettered, and why, in its metrics", async () => {
  const samples = await scrapeMetrics(metricsPort);
  const model = 'model="all-minilm-l6-v2"';
  expect(
    samples.get(`shoal_worker_dead_lettered_messages_total{${model},reason="malformed"}`),
  ).toBe(1);
  expect(samples.get(`shoal_worker_dead_lettered_messages_total{${model},reason="gave_up"}`)).toBe(
    1,
  );
});
