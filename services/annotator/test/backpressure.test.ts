import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { compileCatalog } from "@shoal/config";
import { ANNOTATE_SUBJECT } from "@shoal/jetstream";
import { AnnotateResponseSchema, ErrorCode, WorkRequestSchema } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { minilmDir, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { run, type RunningAnnotator } from "../src/run.js";

const MODEL = "sentence-transformers/all-MiniLM-L6-v2";
let nats: NatsServerHandle;
let nc: NatsConnection;
let annotator: RunningAnnotator;

beforeAll(async () => {
  nats = await startNatsServer();
  annotator = await run({
    natsServers: nats.url,
    catalog: compileCatalog(
      {
        models: [
          {
            id: MODEL,
            key: "all-minilm-l6-v2",
            family: "embedding",
            dimensions: 384,
            maxInputTokens: 256,
            source: { kind: "dir", path: minilmDir() },
          },
        ],
      },
      { modelsDir: "/unused" },
    ),
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
