import { readFileSync } from "node:fs";
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import { compileCatalog, modelsDir } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import { repoRoot } from "@shoal/testing";
import OpenAI, { BadRequestError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningIngress } from "../src/run.js";
import { cosine, norm } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

// `dimensions`, `prompt_name` and token-id input on /v1/embeddings. MiniLM is not
// Matryoshka-trained and has no instruction prompts, so the shipped catalog refuses both for it;
// a second ingress over the same cluster reads a catalog that marks it truncatable and gives it
// e5's prompts, which exercises those paths with real vectors (the arithmetic is the same for a
// model that is trained for them).

let cluster: TestCluster;
let matryoshka: RunningIngress;
let openai: OpenAI;

beforeAll(async () => {
  cluster = await startCluster();
  const shipped = JSON.parse(
    readFileSync(join(repoRoot(), "deploy", "catalog", "default.json"), "utf8"),
  ) as { models: Record<string, unknown>[] };
  const marked = {
    models: shipped.models.map((m) =>
      m["id"] === MINILM
        ? {
            ...m,
            matryoshkaDimensions: [128, 256],
            prompts: { query: "query: ", passage: "passage: " },
          }
        : m,
    ),
  };
  matryoshka = await run({
    natsServers: cluster.nats.url,
    catalog: compileCatalog(marked, { modelsDir: modelsDir(process.env) }),
    port: 0,
    logger: createLogger({ service: "ingress", level: "warn" }),
    tracer: trace.getTracer("test"),
  });
  openai = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
});

afterAll(async () => {
  await matryoshka.stop();
  await cluster.stop();
});

interface Answer {
  data: { embedding: number[] }[];
  usage: { prompt_tokens: number };
}

async function embed(base: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const matryoshkaUrl = (): string => `http://127.0.0.1:${matryoshka.port}`;

describe("dimensions", () => {
  it("is refused with a clear 400 for a model the catalog does not mark truncatable", async () => {
    const res = await embed(cluster.baseUrl, { model: MINILM, input: ["x"], dimensions: 128 });
    expect(res.status).toBe(400);
    expect((res.body as { error: { message: string } }).error.message).toMatch(
      /produces 384 dimensions and cannot be truncated/,
    );
  });

  it("accepts the native width anywhere", async () => {
    const res = await embed(cluster.baseUrl, { model: MINILM, input: ["x"], dimensions: 384 });
    expect(res.status).toBe(200);
    expect((res.body as Answer).data[0]?.embedding).toHaveLength(384);
  });

  it("truncates to a listed width and renormalises, where the catalog allows it", async () => {
    const input = ["matryoshka vectors keep their leading coordinates"];
    const full = (await embed(matryoshkaUrl(), { model: MINILM, input })).body as Answer;
    const cut = (await embed(matryoshkaUrl(), { model: MINILM, input, dimensions: 128 }))
      .body as Answer;
    const row = cut.data[0]?.embedding ?? [];
    expect(row).toHaveLength(128);
    expect(norm(row)).toBeCloseTo(1, 5);
    const head = (full.data[0]?.embedding ?? []).slice(0, 128);
    expect(cosine(row, head)).toBeGreaterThanOrEqual(0.999999);
    // Not merely the prefix: the prefix of a unit vector is shorter than one.
    expect(norm(head)).toBeLessThan(0.99);
  });

  it("refuses a width the catalog does not list, naming those it does", async () => {
    const res = await embed(matryoshkaUrl(), { model: MINILM, input: ["x"], dimensions: 100 });
    expect(res.status).toBe(400);
    expect((res.body as { error: { message: string } }).error.message).toMatch(
      /serves `dimensions` 128, 256, 384; got 100/,
    );
  });

  it("reaches the official openai SDK as BadRequestError, and works through it where allowed", async () => {
    const err = await openai.embeddings
      .create({ model: MINILM, input: ["x"], dimensions: 64 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    const allowed = new OpenAI({
      baseURL: `${matryoshkaUrl()}/v1`,
      apiKey: "unused",
      maxRetries: 0,
    });
    // Base64 is the SDK's default encoding: it decodes the 256 floats itself.
    const res = await allowed.embeddings.create({ model: MINILM, input: ["x"], dimensions: 256 });
    expect(res.data[0]?.embedding).toHaveLength(256);
    expect(norm(res.data[0]?.embedding ?? [])).toBeCloseTo(1, 5);
  });
});

describe("prompt_name", () => {
  it("puts the named instruction before each input, as if the client had", async () => {
    const prompted = (await embed(matryoshkaUrl(), {
      model: MINILM,
      input: ["coral reefs", "tides"],
      prompt_name: "query",
    })) as { status: number; body: Answer };
    const written = (await embed(matryoshkaUrl(), {
      model: MINILM,
      input: ["query: coral reefs", "query: tides"],
    })) as { status: number; body: Answer };
    const bare = (await embed(matryoshkaUrl(), { model: MINILM, input: ["coral reefs"] }))
      .body as Answer;
    expect(prompted.status).toBe(200);
    expect(prompted.body.data.map((d) => d.embedding)).toEqual(
      written.body.data.map((d) => d.embedding),
    );
    expect(prompted.body.usage.prompt_tokens).toBe(written.body.usage.prompt_tokens);
    expect(
      cosine(bare.data[0]?.embedding ?? [], prompted.body.data[0]?.embedding ?? []),
    ).toBeLessThan(0.999);
  });

  it("refuses a prompt the model lacks, naming those it has, and any for a model with none", async () => {
    const unknown = await embed(matryoshkaUrl(), {
      model: MINILM,
      input: ["x"],
      prompt_name: "document",
    });
    expect(unknown.status).toBe(400);
    expect((unknown.body as { error: { message: string } }).error.message).toMatch(
      /has the prompts query, passage; got "document"/,
    );
    const none = await embed(cluster.baseUrl, {
      model: MINILM,
      input: ["x"],
      prompt_name: "query",
    });
    expect(none.status).toBe(400);
    expect((none.body as { error: { message: string } }).error.message).toMatch(/has no prompts/);
  });
});

describe("token-id input", () => {
  // MiniLM's WordPiece ids for "hello world" and "the cluster", without [CLS]/[SEP].
  const HELLO_WORLD = [7592, 2088];
  const THE_CLUSTER = [1996, 9324];

  it("embeds an array of arrays of ids like the texts they encode", async () => {
    const ids = (await embed(cluster.baseUrl, { model: MINILM, input: [HELLO_WORLD, THE_CLUSTER] }))
      .body as Answer;
    const text = (
      await embed(cluster.baseUrl, { model: MINILM, input: ["hello world", "the cluster"] })
    ).body as Answer;
    expect(ids.data).toHaveLength(2);
    ids.data.forEach((d, i) => {
      expect(cosine(d.embedding, text.data[i]?.embedding ?? [])).toBeGreaterThanOrEqual(0.99999);
    });
    expect(ids.usage.prompt_tokens).toBe(text.usage.prompt_tokens);
  });

  it("computes the ids it is sent, not those of the text they spell", async () => {
    // "play" + "##ing" spell "playing", which the tokenizer gives one id (2652): a round trip
    // through text would embed that one token instead of the two sent.
    const sent = (await embed(cluster.baseUrl, { model: MINILM, input: [[2377, 2075]] }))
      .body as Answer;
    const canonical = (await embed(cluster.baseUrl, { model: MINILM, input: [[2652]] }))
      .body as Answer;
    expect(sent.usage.prompt_tokens).toBe(4);
    expect(canonical.usage.prompt_tokens).toBe(3);
    expect(cosine(sent.data[0]?.embedding ?? [], canonical.data[0]?.embedding ?? [])).toBeLessThan(
      0.9999,
    );
  });

  it("cuts ids past the model's limit, or refuses them with truncate false", async () => {
    const long = Array.from({ length: 600 }, () => 7592);
    const cut = (await embed(cluster.baseUrl, { model: MINILM, input: [long] })).body as Answer;
    expect(cut.usage.prompt_tokens).toBe(256);
    const refused = await embed(cluster.baseUrl, {
      model: MINILM,
      input: [HELLO_WORLD, long],
      truncate: false,
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/input 1 is longer than the model's 256 tokens/);
  });

  it("takes a flat array of ids as one input", async () => {
    const res = (await embed(cluster.baseUrl, { model: MINILM, input: HELLO_WORLD }))
      .body as Answer;
    expect(res.data).toHaveLength(1);
  });

  it("works through the official openai SDK", async () => {
    const res = await openai.embeddings.create({
      model: MINILM,
      input: [HELLO_WORLD],
      encoding_format: "float",
    });
    expect(res.data[0]?.embedding).toHaveLength(384);
  });

  it.each([
    {
      name: "an id outside the vocabulary",
      input: [[7592, 30522]],
      message: /input 0: token id 30522 at 1 is outside the vocabulary/,
    },
    { name: "a negative id", input: [[-1]], message: /non-negative integer/ },
    { name: "a fractional id", input: [1.5], message: /non-negative integer/ },
    { name: "an empty id list", input: [[7592], []], message: /input 1 has no token ids/ },
    {
      name: "ids mixed with text",
      input: ["hello", [7592]],
      message: /`input` must be a string, an array of strings, an array of token ids/,
    },
    { name: "nested too deep", input: [[[7592]]], message: /`input` must be/ },
  ])("refuses $name with 400", async ({ input, message }) => {
    const res = await embed(cluster.baseUrl, { model: MINILM, input });
    expect(res.status).toBe(400);
    expect((res.body as { error: { message: string } }).error.message).toMatch(message);
  });
});
