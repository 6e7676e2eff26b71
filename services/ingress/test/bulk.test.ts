import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { trace } from "@opentelemetry/api";
import { compileCatalog } from "@shoal/config";
import { InferenceService } from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import {
  sidecarBinary,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningIngress } from "../src/run.js";
import { inferenceStub, unary } from "./support/grpc-js.js";

// Bulk embedding requests within the documented limits (2,048 inputs, an 8 MiB body), whatever
// their total text size, through every protocol. Compute is simulated at no cost: what is
// under test is that nothing on the way (NATS's 1 MiB payload, a part's size, a reply's)
// refuses them.

const MODEL = "sim/bulk";
let nats: NatsServerHandle;
let worker: ServiceHandle;
let ingress: RunningIngress;
let baseUrl: string;

const entry = simEmbeddingEntry(MODEL, "bulk");

beforeAll(async () => {
  const dir = await tempDir("bulk");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(catalogPath, JSON.stringify({ models: [entry] }));
  nats = await startNatsServer();
  worker = await startService("worker", {
    env: {
      NATS_URL: nats.url,
      SHOAL_CATALOG: catalogPath,
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_BACKEND: "sim",
      SHOAL_WORKER_MODELS: MODEL,
      LOG_LEVEL: "info",
    },
    readyMessage: "worker pulling",
  });
  ingress = await run({
    natsServers: nats.url,
    catalog: compileCatalog({ models: [entry] }, { modelsDir: dir }),
    port: 0,
    logger: createLogger({ service: "ingress", level: "warn" }),
    tracer: trace.getTracer("test"),
  });
  baseUrl = `http://127.0.0.1:${ingress.port}`;
}, 120_000);

afterAll(async () => {
  await ingress.stop();
  await worker.stop();
  await nats.stop();
});

/** `count` distinct inputs of `bytes` ASCII bytes each. */
function inputs(count: number, bytes: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const head = `input ${i} `;
    return head + "x".repeat(bytes - head.length);
  });
}

const SHAPES = [
  // The report: 1.2 MB over 2,048 inputs failed with 503 on every protocol.
  { name: "2,048 inputs, 1.2 MB", texts: inputs(2048, 600) },
  // A 7 MiB body of many inputs, each far over the model's 256 tokens.
  { name: "2,048 inputs, 7 MiB", texts: inputs(2048, 3584) },
  // Seven inputs just under the offload threshold: each must travel alone.
  { name: "7 inputs of 900 KiB", texts: inputs(7, 900 * 1024) },
];

describe.each(SHAPES)("a bulk request of $name", ({ texts }) => {
  it("is answered in full over REST with the official OpenAI SDK", async () => {
    const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
    const res = await client.embeddings.create({ model: MODEL, input: texts });
    expect(res.data).toHaveLength(texts.length);
    expect(res.data.map((d) => d.index)).toEqual(texts.map((_, i) => i));
    for (const d of res.data) expect(d.embedding).toHaveLength(384);
    expect(res.usage.prompt_tokens).toBeGreaterThanOrEqual(texts.length * 3);
  }, 120_000);

  it("is answered in full over Connect", async () => {
    const rpc = createClient(
      InferenceService,
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    );
    const res = await rpc.embed({ model: MODEL, inputs: texts });
    expect(res.embeddings).toHaveLength(texts.length);
    for (const e of res.embeddings) expect(e.values).toHaveLength(384);
  }, 120_000);

  it("is answered in full over gRPC, by @grpc/grpc-js and by Connect's gRPC transport", async () => {
    const stub = inferenceStub(baseUrl);
    try {
      const res = await unary<{ embeddings: { values: number[] }[] }>(
        stub,
        "Embed",
        { model: MODEL, inputs: texts },
        { deadline: Date.now() + 60_000 },
      );
      expect(res.embeddings).toHaveLength(texts.length);
    } finally {
      stub.close();
    }
    const rpc = createClient(InferenceService, createGrpcTransport({ baseUrl }));
    const res = await rpc.embed({ model: MODEL, inputs: texts });
    expect(res.embeddings).toHaveLength(texts.length);
  }, 120_000);
});
