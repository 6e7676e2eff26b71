import { create } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { ensureWorkStream, StreamPublisher } from "@shoal/jetstream";
import { ErrorCode, WorkRequestSchema } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { minilmCatalog, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Annotator } from "../src/index.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let publisher: StreamPublisher;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await ensureWorkStream(await jetstreamManager(nc), { maxMessages: 3 });
  publisher = new StreamPublisher(nc);
});

afterAll(async () => {
  publisher.close();
  await nc.close();
  await nats.stop();
});

it("answers RESOURCE_EXHAUSTED once the bounded work stream is full, instead of queueing", async () => {
  const annotator = new Annotator({
    catalog: minilmCatalog(),
    publisher,
    logger: createLogger({ service: "test", level: "silent" }),
    tracer: trace.getTracer("test"),
  });
  const codes: (ErrorCode | undefined)[] = [];
  for (let i = 0; i < 5; i++) {
    const request = create(WorkRequestSchema, {
      requestId: `r${i}`,
      model: "sentence-transformers/all-MiniLM-L6-v2",
      deadlineUnixMs: BigInt(Date.now() + 10_000),
      replySubject: "shoal.reply.v1.test",
      task: { case: "embed", value: { inputs: [`input ${i}`], truncate: true } },
    });
    codes.push((await annotator.annotate(request, ROOT_CONTEXT)).error?.code);
  }
  expect(codes).toEqual([
    undefined,
    undefined,
    undefined,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.RESOURCE_EXHAUSTED,
  ]);
});
