import { randomBytes } from "node:crypto";
import OpenAI, { APIError } from "openai";
import { smollm2CatalogDocument, startLlamaServer, type LlamaServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SMOLLM2,
  startGenerationCluster,
  type GenerationCluster,
} from "./support/generation-cluster.js";

// A catalog model served by an external OpenAI-compatible engine (llama-cpp-python's server
// over the real SmolLM2 GGUF, requiring an API key) through the whole cluster: ingress,
// JetStream, a worker pulling its work and the sidecar's openai backend forwarding it, beside
// SmolLM2 computed by Candle in the same worker. The official openai SDK talks to both ends.

const REMOTE = "remote/smollm2";
const REMOTE_EMBEDDER = "remote/smollm2-embed";
const KEY = `sk-${randomBytes(8).toString("hex")}`;
const KEY_ENV = "SHOAL_TEST_REMOTE_KEY";

let engine: LlamaServerHandle;
let embedder: LlamaServerHandle;
let cluster: GenerationCluster;
let shoal: OpenAI;
let direct: OpenAI;

beforeAll(async () => {
  [engine, embedder] = await Promise.all([
    startLlamaServer({ alias: "smollm2-remote", apiKey: KEY }),
    startLlamaServer({ alias: "smollm2-embed", embedding: true }),
  ]);
  const remote = {
    id: REMOTE,
    key: "remote-smollm2",
    family: "generator",
    dimensions: 0,
    maxInputTokens: 2048,
    source: { kind: "openai", url: engine.url, remoteModel: engine.alias, apiKeyEnv: KEY_ENV },
  };
  const remoteEmbedder = {
    id: REMOTE_EMBEDDER,
    key: "remote-smollm2-embed",
    family: "embedding",
    dimensions: 576,
    maxInputTokens: 2048,
    source: { kind: "openai", url: embedder.url, remoteModel: embedder.alias },
  };
  cluster = await startGenerationCluster({
    catalog: { models: [...smollm2CatalogDocument().models, remote, remoteEmbedder] },
    env: { [KEY_ENV]: KEY },
  });
  shoal = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
  direct = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: KEY, maxRetries: 0 });
}, 600_000);

afterAll(async () => {
  await cluster.stop();
  await engine.stop();
  await embedder.stop();
});

const CHAT = {
  messages: [{ role: "user" as const, content: "Name three colors." }],
  max_tokens: 24,
  temperature: 0,
};

describe("a catalog model on an external engine", { timeout: 240_000 }, () => {
  let answer = "";

  it("answers chat through the cluster with the engine's own answer", async () => {
    const res = await shoal.chat.completions.create({ ...CHAT, model: REMOTE });
    expect(res.model).toBe(REMOTE);
    answer = res.choices[0]?.message.content ?? "";
    const own = await direct.chat.completions.create({ ...CHAT, model: engine.alias });
    expect(answer).toBe(own.choices[0]?.message.content);
    expect(answer.toLowerCase()).toMatch(/red|blue|green|yellow/);
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("streams the same answer", async () => {
    const chunks = await shoal.chat.completions.create({ ...CHAT, model: REMOTE, stream: true });
    let streamed = "";
    for await (const chunk of chunks) streamed += chunk.choices[0]?.delta.content ?? "";
    expect(streamed).toBe(answer);
  });

  it("serves it beside the worker's Candle model, concurrently", async () => {
    const [remote, local] = await Promise.all([
      shoal.chat.completions.create({ ...CHAT, model: REMOTE }),
      shoal.chat.completions.create({ ...CHAT, model: SMOLLM2 }),
    ]);
    expect(remote.choices[0]?.message.content).toBe(answer);
    expect(local.choices[0]?.message.content?.trim()).not.toBe("");
  });

  it("refuses adapters for it: the engine holds its own", async () => {
    const error = await shoal.chat.completions
      .create({ ...CHAT, model: `${REMOTE}:some-adapter` })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(404);
  });
});

describe("an embedding model on an external engine", { timeout: 240_000 }, () => {
  it("embeds a batch through the cluster as the engine does", async () => {
    const input = ["the tide comes in", "a reef of coral", "ships at sea"];
    const res = await shoal.embeddings.create({ model: REMOTE_EMBEDDER, input });
    const own = await new OpenAI({
      baseURL: `${embedder.url}/v1`,
      apiKey: "unused",
    }).embeddings.create({
      model: embedder.alias,
      input,
      // The SDK asks for base64 unless told otherwise, which llama-cpp-python does not speak.
      encoding_format: "float",
    });
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    for (const [i, row] of res.data.entries()) {
      expect(row.embedding).toHaveLength(576);
      const theirs = own.data[i]?.embedding ?? [];
      // The engine's floats pass through as float32.
      for (const [j, x] of row.embedding.entries()) expect(x).toBeCloseTo(theirs[j] ?? NaN, 5);
    }
  });
});

describe("an external engine that goes down", { timeout: 240_000 }, () => {
  it("fails that model's requests with an error, and the Candle model keeps answering", async () => {
    await engine.process.terminate("SIGKILL");
    const error = await shoal.chat.completions.create({ ...CHAT, model: REMOTE }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBeGreaterThanOrEqual(500);
    const local = await shoal.chat.completions.create({ ...CHAT, model: SMOLLM2 });
    expect(local.choices[0]?.message.content?.trim()).not.toBe("");
    expect(cluster.worker.output()).toMatch(/remote-smollm2|remote\/smollm2/);
  });
});
