import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { ANNOTATE_SUBJECT } from "@shoal/jetstream";
import {
  AnnotateResponseSchema,
  ErrorCode,
  WorkItemSchema,
  WorkRequestSchema,
  type WorkItem,
} from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { minilmDir, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileCatalog } from "@shoal/config";
import { run, type RunningAnnotator } from "../src/run.js";
import { MODEL } from "./support.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let annotator: RunningAnnotator;
const TUNED = "tuned/minilm";
const queued: { subject: string; item: WorkItem; msgId: string | undefined }[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  // MiniLM a second time, under an id whose serving settings (as a config bundle would tune
  // them) set its own length buckets.
  const minilm = {
    family: "embedding",
    dimensions: 384,
    maxInputTokens: 256,
    source: { kind: "dir", path: minilmDir() },
  };
  const catalog = compileCatalog(
    {
      models: [
        { ...minilm, id: MODEL, key: "all-minilm-l6-v2" },
        { ...minilm, id: TUNED, key: "tuned-minilm", serving: { bucketEdges: [32] } },
      ],
    },
    { modelsDir: "/unused" },
  );
  annotator = await run({
    natsServers: nats.url,
    catalog,
    partMaxInputs: 4,
    logger: createLogger({ service: "annotator", level: "silent" }),
    tracer: trace.getTracer("test"),
  });
  nc = await connect({ servers: nats.url });
  nc.subscribe("shoal.work.v1.>", {
    callback: (_err, msg) => {
      queued.push({
        subject: msg.subject,
        item: fromBinary(WorkItemSchema, msg.data),
        msgId: msg.headers?.get("Nats-Msg-Id"),
      });
    },
  });
  await nc.flush();
});

afterAll(async () => {
  await nc.close();
  await annotator.stop();
  await nats.stop();
});

async function annotate(inputs: string[], truncate = true, model = MODEL) {
  const request = create(WorkRequestSchema, {
    requestId: `req-${queued.length}-${inputs.length}`,
    model,
    deadlineUnixMs: BigInt(Date.now() + 10_000),
    replySubject: "shoal.reply.v1.test",
    task: { case: "embed", value: { inputs, truncate } },
  });
  const msg = await nc.request(ANNOTATE_SUBJECT, toBinary(WorkRequestSchema, request), {
    timeout: 5000,
  });
  await nc.flush();
  return { request, response: fromBinary(AnnotateResponseSchema, msg.data) };
}

describe("annotator service", () => {
  it("counts tokens with the model's tokenizer and queues parts by length bucket", async () => {
    const before = queued.length;
    const { request, response } = await annotate([
      "hello world",
      "a",
      "b",
      "c",
      "a much longer sentence ".repeat(10),
    ]);
    expect(response.error).toBeUndefined();
    expect(response.parts).toBe(2);
    await new Promise((r) => setTimeout(r, 100));
    const mine = queued.slice(before);
    expect(mine.map((q) => [q.item.part, q.item.firstInput, q.item.maxInputTokens])).toEqual([
      [0, 0, 4],
      [1, 4, 42],
    ]);
    expect(mine.map((q) => q.subject)).toEqual([
      "shoal.work.v1.all-minilm-l6-v2.b16",
      "shoal.work.v1.all-minilm-l6-v2.b64",
    ]);
    expect(mine.map((q) => q.msgId)).toEqual([`${request.requestId}:0`, `${request.requestId}:1`]);
    expect(response.estimatedTokens).toBe(4 + 3 + 3 + 3 + 42);
  });

  it("buckets by the model's own edges when its serving settings name them", async () => {
    const before = queued.length;
    const long = "a much longer sentence ".repeat(10);
    const { response } = await annotate(["hello world", "a", "b", "c", long], true, TUNED);
    expect(response.error).toBeUndefined();
    await new Promise((r) => setTimeout(r, 100));
    // The same parts as above (4 and 42 tokens at most) under the model's edge 32 and its
    // maximum, 256, which closes the list, instead of the annotator's 16 and 64.
    expect(queued.slice(before).map((q) => q.subject)).toEqual([
      "shoal.work.v1.tuned-minilm.b32",
      "shoal.work.v1.tuned-minilm.b256",
    ]);
  });

  it("rejects an over-long input with truncate: false and queues nothing", async () => {
    const before = queued.length;
    const { response } = await annotate(["short", "word ".repeat(300)], false);
    expect(response.error?.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(response.error?.message).toMatch(/input 1 is longer than the model's 256 tokens/);
    await new Promise((r) => setTimeout(r, 100));
    expect(queued.length).toBe(before);
  });

  it("answers a malformed request with an error and keeps serving", async () => {
    const msg = await nc.request(ANNOTATE_SUBJECT, new Uint8Array([0xff, 0xff, 0xff]), {
      timeout: 5000,
    });
    expect(fromBinary(AnnotateResponseSchema, msg.data).error?.code).toBe(
      ErrorCode.INVALID_ARGUMENT,
    );
    const { response } = await annotate(["still here"]);
    expect(response.error).toBeUndefined();
  });

  it("answers an unknown model with NOT_FOUND", async () => {
    const request = create(WorkRequestSchema, {
      requestId: "x",
      model: "nope",
      task: { case: "embed", value: { inputs: ["x"] } },
    });
    const msg = await nc.request(ANNOTATE_SUBJECT, toBinary(WorkRequestSchema, request), {
      timeout: 5000,
    });
    expect(fromBinary(AnnotateResponseSchema, msg.data).error?.code).toBe(ErrorCode.NOT_FOUND);
  });
});
