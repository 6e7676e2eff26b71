import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { ANNOTATE_SUBJECT } from "@shoal/jetstream";
import { AnnotateResponseSchema, ErrorCode, WorkRequestSchema } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { run, type RunningAnnotator } from "../src/run.js";
import { MODEL, minilmCatalog } from "./support.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let annotator: RunningAnnotator;

beforeAll(async () => {
  nats = await startNatsServer();
  annotator = await run({
    natsServers: nats.url,
    catalog: minilmCatalog(),
    stream: { maxMessages: 3 },
    logger: createLogger({ service: "annotator", level: "silent" }),
    tracer: trace.getTracer("test"),
  });
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await nc.close();
  await annotator.stop();
  await nats.stop();
});

it("answers RESOURCE_EXHAUSTED once the bounded work stream is full, instead of queueing", async () => {
  const codes: (ErrorCode | undefined)[] = [];
  for (let i = 0; i < 5; i++) {
    const request = create(WorkRequestSchema, {
      requestId: `r${i}`,
      model: MODEL,
      deadlineUnixMs: BigInt(Date.now() + 10_000),
      replySubject: "shoal.reply.v1.test",
      task: { case: "embed", value: { inputs: [`input ${i}`], truncate: true } },
    });
    const msg = await nc.request(ANNOTATE_SUBJECT, toBinary(WorkRequestSchema, request), {
      timeout: 5000,
    });
    codes.push(fromBinary(AnnotateResponseSchema, msg.data).error?.code);
  }
  expect(codes).toEqual([
    undefined,
    undefined,
    undefined,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.RESOURCE_EXHAUSTED,
  ]);
});
