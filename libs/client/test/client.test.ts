import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  freePort,
  repoRoot,
  sidecarBinary,
  startNatsServer,
  startService,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  InvalidRequestError,
  NotFoundError,
  RateLimitedError,
  ShoalClient,
  type EmbedResult,
} from "../src/index.js";

// A real cluster, every part its own process as deployed: nats-server, a worker with its
// sidecar and the MiniLM weights, and two ingresses: one normal, one that holds no requests
// at all and so answers every embedding with 429 and `Retry-After: 1`.

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
let nats: NatsServerHandle | undefined;
/** Started services, stopped in reverse order. */
const services: ServiceHandle[] = [];
let client: ShoalClient;
let fullUrl: string;

async function startIngress(
  env: Record<string, string>,
): Promise<{ svc: ServiceHandle; url: string }> {
  const port = await freePort();
  const svc = await startService("ingress", {
    env: { ...env, SHOAL_PORT: String(port) },
    readyMessage: "ingress listening",
  });
  return { svc, url: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  nats = await startNatsServer();
  const env = { NATS_URL: nats.url, SHOAL_SIDECAR_BIN: sidecarBinary(), LOG_LEVEL: "info" };
  services.push(await startService("worker", { env, readyMessage: "worker pulling" }));
  const normal = await startIngress(env);
  services.push(normal.svc);
  client = new ShoalClient({ baseUrl: normal.url });
  const refusing = await startIngress({ ...env, SHOAL_MAX_PENDING: "0" });
  services.push(refusing.svc);
  fullUrl = refusing.url;
});

afterAll(async () => {
  for (const svc of services.reverse()) await svc.stop();
  await nats?.stop();
});

interface FixtureSentence {
  readonly text: string;
  readonly embedding: readonly number[];
  readonly tokens: number;
}

function fixture(): readonly FixtureSentence[] {
  const path = join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json");
  return (JSON.parse(readFileSync(path, "utf8")) as { sentences: FixtureSentence[] }).sentences;
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

describe("ShoalClient against a real cluster", () => {
  it("returns Float32Array rows that match sentence-transformers", async () => {
    const sentences = fixture().filter((s) => s.text.trim() !== "");
    const res = await client.embed({ model: MINILM, input: sentences.map((s) => s.text) });
    expect(res.model).toBe(MINILM);
    expect(res.embeddings).toHaveLength(sentences.length);
    res.embeddings.forEach((row, i) => {
      expect(row).toBeInstanceOf(Float32Array);
      expect(row).toHaveLength(384);
      expect(cosine(row, sentences[i]?.embedding ?? [])).toBeGreaterThanOrEqual(0.9999);
    });
    expect(res.usage.promptTokens).toBe(sentences.reduce((n, s) => n + s.tokens, 0));
    expect(res.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("embeds token ids to the same vector as their text", async () => {
    // MiniLM's WordPiece ids for "hello world", without [CLS]/[SEP].
    const [byIds, byText] = await Promise.all([
      client.embed({ model: MINILM, input: [[7592, 2088]] }),
      client.embed({ model: MINILM, input: ["hello world"] }),
    ]);
    expect(cosine(first(byIds), first(byText))).toBeGreaterThanOrEqual(0.99999);
  });

  it("lists the models", async () => {
    expect((await client.models()).map((m) => m.id)).toContain(MINILM);
  });

  it("throws typed errors with the server's message", async () => {
    const missing = await client
      .embed({ model: "nope/nope", input: ["x"] })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).status).toBe(404);
    expect((missing as NotFoundError).message).toMatch(/available: sentence-transformers/);
    const narrow = await client
      .embed({ model: MINILM, input: ["x"], dimensions: 128 })
      .catch((e: unknown) => e);
    expect(narrow).toBeInstanceOf(InvalidRequestError);
    expect((narrow as InvalidRequestError).code).toBe("invalid_argument");
    const outside = await client
      .embed({ model: MINILM, input: [[7592, 30522]] })
      .catch((e: unknown) => e);
    expect(outside).toBeInstanceOf(InvalidRequestError);
    expect((outside as InvalidRequestError).message).toMatch(/outside the vocabulary/);
  });

  it("retries a 429 after Retry-After, then gives up with RateLimitedError", async () => {
    const patient = new ShoalClient({ baseUrl: fullUrl, maxRetries: 1 });
    const started = Date.now();
    const err = await patient.embed({ model: MINILM, input: ["x"] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).attempts).toBe(2);
    expect((err as RateLimitedError).retryAfterSeconds).toBe(1);
    // The one retry waited for the second the server asked for.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("does not retry when told not to", async () => {
    const impatient = new ShoalClient({ baseUrl: fullUrl, maxRetries: 0 });
    const err = await impatient.embed({ model: MINILM, input: ["x"] }).catch((e: unknown) => e);
    expect((err as RateLimitedError).attempts).toBe(1);
  });
});

function first(res: EmbedResult): Float32Array {
  const row = res.embeddings[0];
  if (row === undefined) throw new Error("no embedding");
  return row;
}
