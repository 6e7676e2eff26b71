import { create, fromBinary } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { compileCatalog } from "@shoal/config";
import { ensureWorkStream, StreamPublisher } from "@shoal/jetstream";
import { ErrorCode, WorkBundleSchema, WorkRequestSchema, type WorkItem } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { minilmDir, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Annotator } from "../src/index.js";

const MODEL = "sentence-transformers/all-MiniLM-L6-v2";
const TUNED = "tuned/minilm";
let nats: NatsServerHandle;
let nc: NatsConnection;
let publisher: StreamPublisher;
let annotator: Annotator;
/** One entry per queued item; items of one message share its id and size. */
const queued: { subject: string; item: WorkItem; msgId: string | undefined; bytes: number }[] = [];

const minilm = {
  family: "embedding",
  dimensions: 384,
  maxInputTokens: 256,
  source: { kind: "dir", path: minilmDir() },
};
// MiniLM a second time, under an id whose serving settings (as a config bundle would tune
// them) set its own length buckets.
const catalog = compileCatalog(
  {
    models: [
      { ...minilm, id: MODEL, key: "all-minilm-l6-v2" },
      { ...minilm, id: TUNED, key: "tuned-minilm", serving: { bucketEdges: [32] } },
    ],
  },
  { modelsDir: "/unused" },
);

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await ensureWorkStream(await jetstreamManager(nc), { maxMessages: 1000 });
  publisher = new StreamPublisher(nc);
  annotator = new Annotator({
    catalog,
    publisher,
    partMaxInputs: 4,
    partMaxBytes: 1000,
    logger: createLogger({ service: "test", level: "silent" }),
    tracer: trace.getTracer("test"),
  });
  nc.subscribe("shoal.work.v1.>", {
    callback: (_err, msg) => {
      for (const item of fromBinary(WorkBundleSchema, msg.data).items) {
        queued.push({
          subject: msg.subject,
          item,
          msgId: msg.headers?.get("Nats-Msg-Id"),
          bytes: msg.data.byteLength,
        });
      }
    },
  });
  await nc.flush();
});

afterAll(async () => {
  publisher.close();
  await nc.close();
  await nats.stop();
});

let n = 0;
function annotate(inputs: string[], model = MODEL) {
  const request = create(WorkRequestSchema, {
    requestId: `req-${n++}`,
    model,
    deadlineUnixMs: BigInt(Date.now() + 10_000),
    replySubject: "shoal.reply.v1.test",
    task: { case: "embed", value: { inputs, truncate: true } },
  });
  return annotator.annotate(request, ROOT_CONTEXT).then((response) => ({ request, response }));
}

const settle = () => new Promise((r) => setTimeout(r, 100));
const long = "a much longer sentence ".repeat(10);

describe("the annotator", () => {
  it("estimates tokens from each input's shape and queues parts by length bucket", async () => {
    const before = queued.length;
    const { request, response } = await annotate(["hello world", "a", "b", "c", long]);
    expect(response.error).toBeUndefined();
    expect(response.parts).toBe(2);
    await settle();
    const mine = queued.slice(before);
    // Uncalibrated: 2 special tokens and a token per 4 ASCII characters.
    expect(mine.map((q) => [q.item.part, q.item.firstInput, q.item.maxInputTokens])).toEqual([
      [0, 0, 5],
      [1, 4, 60],
    ]);
    expect(mine.map((q) => q.subject)).toEqual([
      "shoal.work.v1.all-minilm-l6-v2.b16",
      "shoal.work.v1.all-minilm-l6-v2.b64",
    ]);
    // Two subjects, two messages, each with its own dedupe key.
    expect(new Set(mine.map((q) => q.msgId)).size).toBe(2);
    expect(mine.every((q) => q.item.requestId === request.requestId)).toBe(true);
    expect(response.estimatedTokens).toBe(5 + 3 + 3 + 3 + 60);
  });

  it("buckets by the model's own edges when its serving settings name them", async () => {
    const before = queued.length;
    const { response } = await annotate(["hello world", "a", "b", "c", long], TUNED);
    expect(response.error).toBeUndefined();
    await settle();
    // The same parts as above under the model's edge 32 and its maximum, 256, which closes
    // the list, instead of the annotator's 16 and 64.
    expect(queued.slice(before).map((q) => q.subject)).toEqual([
      "shoal.work.v1.tuned-minilm.b32",
      "shoal.work.v1.tuned-minilm.b256",
    ]);
  });

  it("estimates with what the model's answers taught it", async () => {
    const estimate = annotator.estimate(TUNED);
    // The sidecar counted a token for every 8 ASCII characters: half the uncalibrated rate.
    for (let i = 0; i < 50; i++) estimate.observe("abcdefgh".repeat(8), 2 + 8, false);
    const text = "abcdefgh".repeat(32);
    const before = queued.length;
    await annotate([text], TUNED);
    await settle();
    const [queuedTokens] = queued.slice(before).map((q) => q.item.maxInputTokens);
    expect(queuedTokens).toBe(estimate.count(text));
    // 2 + 32 exactly calibrated, 66 uncalibrated.
    expect(queuedTokens).toBeLessThan(2 + 36);
  });

  it("cuts a request by bytes too, so every work item fits a NATS message", async () => {
    const before = queued.length;
    // Ten 300-byte inputs: 3,000 bytes against a 1,000-byte bound.
    const { response } = await annotate(Array.from({ length: 10 }, () => "x".repeat(300)));
    expect(response.error).toBeUndefined();
    expect(response.parts).toBe(4);
    await settle();
    // Four inputs a part (partMaxInputs) would make three parts; the byte bound makes four.
    expect(
      queued
        .slice(before)
        .map((q) => (q.item.task.case === "embed" ? q.item.task.value.inputs.length : 0)),
    ).toEqual([3, 3, 3, 1]);
  });

  it("queues requests that arrive together as one message, within a part's limits", async () => {
    const before = queued.length;
    // Six single-input requests in one event-loop turn: one message would carry six inputs,
    // past partMaxInputs (4), so they go as a message of four and one of two.
    const answered = await Promise.all(Array.from({ length: 6 }, (_, i) => annotate([`hi ${i}`])));
    expect(answered.every((a) => a.response.error === undefined)).toBe(true);
    await settle();
    const mine = queued.slice(before);
    expect(mine.map((q) => q.item.requestId)).toEqual(answered.map((a) => a.request.requestId));
    const perMessage = new Map<string | undefined, number>();
    for (const q of mine) perMessage.set(q.msgId, (perMessage.get(q.msgId) ?? 0) + 1);
    expect([...perMessage.values()]).toEqual([4, 2]);
    // Each item keeps its own request's identity, deadline and reply subject.
    expect(mine.every((q) => q.item.parts === 1 && q.item.deadlineUnixMs > 0n)).toBe(true);
  });

  it("sends a request alone when nothing else is queued with it", async () => {
    const before = queued.length;
    await annotate(["first"]);
    await annotate(["second"]);
    await settle();
    const mine = queued.slice(before);
    expect(mine).toHaveLength(2);
    expect(mine[0]?.msgId).not.toBe(mine[1]?.msgId);
  });

  it("answers an unknown model with NOT_FOUND and queues nothing", async () => {
    const before = queued.length;
    const { response } = await annotate(["x"], "nope");
    expect(response.error?.code).toBe(ErrorCode.NOT_FOUND);
    await settle();
    expect(queued.length).toBe(before);
  });

  it("refuses token ids outside the vocabulary with INVALID_ARGUMENT", async () => {
    const request = create(WorkRequestSchema, {
      requestId: `req-${n++}`,
      model: MODEL,
      deadlineUnixMs: BigInt(Date.now() + 10_000),
      replySubject: "shoal.reply.v1.test",
      task: { case: "embed", value: { tokenInputs: [{ ids: [101, 999_999] }], truncate: true } },
    });
    const response = await annotator.annotate(request, ROOT_CONTEXT);
    expect(response.error?.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(response.error?.message).toMatch(/token id 999999 at 1 is outside the vocabulary/);
  });
});
