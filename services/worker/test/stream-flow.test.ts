import { fromBinary } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { context, trace } from "@opentelemetry/api";
import { Annotator } from "@shoal/annotation";
import { compileCatalog } from "@shoal/config";
import { StreamGateway, type GenerationEvent, type GenerationStream } from "@shoal/gateway";
import { ensureModelConsumer, ensureWorkStream, pull, StreamPublisher } from "@shoal/jetstream";
import { FinishReason, WorkBundleSchema, type WorkItem } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, tempDir, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamOut } from "../src/generation-stream-out.js";

// The streaming protocol between the worker's StreamOut and ingress's StreamGateway over a
// real nats-server, with the real annotator queueing into real JetStream. The text comes from
// the test instead of a model, so flow control, cancellation and attempt binding can be
// driven precisely (test/generation*.test.ts in ingress run the same path with SmolLM2).

const MODEL = "test/generator";
const WINDOW = 4;

let nats: NatsServerHandle;
let nc: NatsConnection;
let gateway: StreamGateway;
let stream: string;
let consumer: string;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  stream = await ensureWorkStream(jsm);
  const dir = await tempDir("generator");
  const catalog = compileCatalog(
    {
      models: [
        {
          id: MODEL,
          key: "test-generator",
          family: "generator",
          dimensions: 0,
          maxInputTokens: 2048,
          source: { kind: "dir", path: dir },
        },
      ],
    },
    { modelsDir: "/unused" },
  );
  consumer = await ensureModelConsumer(jsm, stream, "test-generator");
  const logger = createLogger({ service: "test", level: "error" });
  const tracer = trace.getTracer("test");
  gateway = await StreamGateway.start({
    nc,
    annotator: new Annotator({ catalog, publisher: new StreamPublisher(nc), logger, tracer }),
    catalog,
    logger,
    window: WINDOW,
    idleTimeoutMs: 20_000,
  });
}, 60_000);

afterAll(async () => {
  gateway.close();
  await nc.close();
  await nats.stop();
});

/** Queues a generation and takes its item off the queue, as a worker would. */
async function queued(): Promise<{
  item: WorkItem;
  ack: () => void;
  started: ReturnType<StreamGateway["generate"]>;
}> {
  const started = gateway.generate(
    { model: MODEL, prompt: "hello", maxTokens: 64 },
    context.active(),
  );
  started.catch(() => undefined);
  for (;;) {
    const [msg] = await pull(nc, stream, consumer, { batch: 1, expiresMs: 1000 });
    if (msg !== undefined) {
      return {
        item: fromBinary(WorkBundleSchema, msg.data).items[0] as WorkItem,
        ack: () => {
          msg.ack();
        },
        started,
      };
    }
  }
}

function out(
  item: WorkItem,
  attempt: string,
  onCancel: (reason: string) => void,
  stallTimeoutMs = 20_000,
): StreamOut {
  return new StreamOut({
    nc,
    item,
    workerId: "w1",
    attempt,
    n: 1,
    window: WINDOW,
    stallTimeoutMs,
    ctx: context.active(),
    onCancel,
  });
}

function doneEvent(completionTokens: number): Parameters<StreamOut["done"]>[1] {
  return {
    $typeName: "shoal.work.v1.StreamDone",
    index: 0,
    finishReason: FinishReason.LENGTH,
    promptTokens: 2,
    completionTokens,
  };
}

async function take(s: GenerationStream, n: number): Promise<GenerationEvent[]> {
  const events: GenerationEvent[] = [];
  if (n === 0) return events;
  for await (const e of s) {
    events.push(e);
    if (events.length >= n) break;
  }
  return events;
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("generation stream over NATS", { timeout: 60_000 }, () => {
  it("holds the worker to the window while the client reads nothing, coalescing its text", async () => {
    const { item, ack, started } = await queued();
    const worker = out(item, "a1", () => undefined);
    worker.tokens(0, "t0 ", 1);
    const generation = await started;
    for (let i = 1; i < 40; i++) worker.tokens(0, `t${i} `, 1);
    worker.done(0, doneEvent(40));
    await nc.flush();
    // Nothing read yet: the worker published a window's worth and holds the rest.
    expect(worker.published).toBe(WINDOW);
    const events: GenerationEvent[] = [];
    for await (const e of generation.stream) events.push(e);
    await worker.drained();
    worker.close();
    ack();
    const text = events.map((e) => (e.kind === "tokens" ? e.text : "")).join("");
    expect(text).toBe(Array.from({ length: 40 }, (_, i) => `t${i} `).join(""));
    // 40 tokens and a done went out as far fewer events: text was coalesced while held.
    expect(events.length).toBeLessThan(20);
    expect(events.at(-1)).toMatchObject({
      kind: "done",
      finishReason: "length",
      completionTokens: 40,
    });
    expect(events.reduce((n, e) => n + (e.kind === "tokens" ? e.tokens : 0), 0)).toBe(40);
  });

  it("a client that goes away cancels the worker's attempt", async () => {
    const { item, ack, started } = await queued();
    let cancelled: string | undefined;
    const worker = out(item, "b1", (reason) => (cancelled = reason));
    worker.tokens(0, "x", 1);
    const generation = await started;
    await take(generation.stream, 1);
    generation.stream.cancel();
    await until(() => cancelled !== undefined);
    expect(cancelled).toBe("cancelled by ingress");
    expect(worker.cancelled).toBe(true);
    worker.close();
    ack();
  });

  it("a second attempt at the same item is cancelled; the first keeps the client", async () => {
    const { item, ack, started } = await queued();
    let secondCancelled = false;
    const first = out(item, "c1", () => undefined);
    first.tokens(0, "first ", 1);
    const generation = await started;
    const second = out(item, "c2", () => (secondCancelled = true));
    second.tokens(0, "second ", 1);
    await until(() => secondCancelled);
    first.tokens(0, "answer", 1);
    first.done(0, doneEvent(2));
    const events: GenerationEvent[] = [];
    for await (const e of generation.stream) events.push(e);
    expect(events.map((e) => (e.kind === "tokens" ? e.text : "")).join("")).toBe("first answer");
    first.close();
    second.close();
    ack();
  });

  it("a client that stays stalled has its generation cancelled by the worker", async () => {
    const { item, ack, started } = await queued();
    let cancelled: string | undefined;
    const worker = out(item, "d1", (reason) => (cancelled = reason), 300);
    worker.tokens(0, "x", 1);
    await started;
    for (let i = 0; i < 10; i++) worker.tokens(0, "y", 1);
    await until(() => cancelled !== undefined);
    expect(cancelled).toMatch(/read nothing/);
    worker.close();
    ack();
  });

  it("events for a request ingress no longer holds are answered with cancel", async () => {
    const { item, ack, started } = await queued();
    const worker = out(item, "e1", () => undefined);
    worker.tokens(0, "x", 1);
    worker.done(0, doneEvent(1));
    const generation = await started;
    await take(generation.stream, 2);
    await worker.drained();
    worker.close();
    ack();
    let cancelled = false;
    const redelivered = out(item, "e2", () => (cancelled = true));
    redelivered.tokens(0, "again", 1);
    await until(() => cancelled);
    expect(gateway.strays).toBeGreaterThan(0);
    redelivered.close();
  });
});
