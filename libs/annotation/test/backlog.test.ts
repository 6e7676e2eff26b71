import { create } from "@bufbuild/protobuf";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { ensureModelConsumer, ensureWorkStream, pull, StreamPublisher } from "@shoal/jetstream";
import { ErrorCode, WorkRequestSchema } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { minilmCatalog, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Annotator, Backlog } from "../src/index.js";

const MODEL = "sentence-transformers/all-MiniLM-L6-v2";
let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let backlog: Backlog;
let annotator: Annotator;
let stream: string;
let consumer: string;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  stream = await ensureWorkStream(jsm);
  consumer = await ensureModelConsumer(jsm, stream, "all-minilm-l6-v2");
  const catalog = minilmCatalog();
  const logger = createLogger({ service: "test", level: "silent" });
  backlog = new Backlog({ jsm, stream, catalog, maxQueuedPerModel: 2, refreshMs: 20, logger });
  await backlog.start();
  annotator = new Annotator({
    catalog,
    publisher: new StreamPublisher(nc),
    logger,
    tracer: trace.getTracer("t"),
    backlog,
  });
});

afterAll(async () => {
  backlog.stop();
  await nc.close();
  await nats.stop();
});

let n = 0;
async function annotate() {
  const request = create(WorkRequestSchema, {
    requestId: `r${n++}`,
    model: MODEL,
    deadlineUnixMs: BigInt(Date.now() + 10_000),
    replySubject: "shoal.reply.v1.test",
    task: { case: "embed", value: { inputs: ["queued"], truncate: true } },
  });
  return annotator.annotate(request, ROOT_CONTEXT);
}

const settle = () => new Promise((r) => setTimeout(r, 100));

it("refuses new work for a model whose queue is past its bound, and accepts it again once drained", async () => {
  expect((await annotate()).error).toBeUndefined();
  expect((await annotate()).error).toBeUndefined();
  await settle();
  expect(backlog.queued("all-minilm-l6-v2")).toBe(2);
  const refused = await annotate();
  expect(refused.error?.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
  expect(refused.error?.message).toMatch(/2 items queued \(limit 2\)/);

  for (const m of await pull(nc, stream, consumer, { batch: 10 })) m.ack();
  await settle();
  expect(backlog.queued("all-minilm-l6-v2")).toBe(0);
  expect((await annotate()).error).toBeUndefined();
});
