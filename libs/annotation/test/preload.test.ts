import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { compileCatalog } from "@shoal/config";
import { StreamPublisher } from "@shoal/jetstream";
import { createLogger } from "@shoal/telemetry";
import { minilmDir, smollm2Dir, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Annotator } from "../src/index.js";

let nats: NatsServerHandle;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

const entry = (key: string, path: string, over: object = {}) => ({
  id: `t/${key}`,
  key,
  family: "embedding",
  dimensions: 384,
  maxInputTokens: 256,
  source: { kind: "dir", path },
  ...over,
});

it("reads the vocabularies of the models whose files are here, and only those", async () => {
  const catalog = compileCatalog(
    {
      models: [
        entry("a", minilmDir()),
        entry("b", minilmDir()),
        entry("not-fetched", "/nonexistent/shoal-model"),
        // A GGUF model's tokenizer is inside its weights, and token-id inputs are for encoders.
        entry("gguf", smollm2Dir(), { family: "generator", weights: "gguf", dimensions: 0 }),
      ],
    },
    { modelsDir: "/unused" },
  );
  const annotator = new Annotator({
    catalog,
    publisher: new StreamPublisher(nc),
    logger: createLogger({ service: "test", level: "silent" }),
    tracer: trace.getTracer("t"),
  });
  expect(await annotator.preloadVocabularies()).toBe(2);
  // Already loaded: a second call parses nothing again and counts the same.
  expect(await annotator.preloadVocabularies()).toBe(2);
});
