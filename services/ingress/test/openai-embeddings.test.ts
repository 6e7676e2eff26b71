import { request as httpRequest } from "node:http";
import { createConnection } from "node:net";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { createLogger } from "@shoal/telemetry";
import { defaultCatalog } from "@shoal/testing";
import { run } from "../src/run.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine, minilmFixture, norm } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

let cluster: TestCluster;
let spy: NatsConnection;
let work: Subscription;
let published = 0;

beforeAll(async () => {
  cluster = await startCluster({ maxBodyBytes: 64 * 1024 });
  // Every work item the annotator publishes also reaches a core subscriber on its subject,
  // which lets the bad-input tests prove nothing was queued for a worker.
  spy = await connect({ servers: cluster.nats.url });
  work = spy.subscribe("shoal.work.v1.>", {
    callback: () => {
      published++;
    },
  });
  await spy.flush();
});

afterAll(async () => {
  work.unsubscribe();
  await spy.close();
  await cluster.stop();
});

async function embeddings(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${cluster.baseUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

interface EmbeddingsBody {
  data: { index: number; embedding: number[] | string; truncated: boolean }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

describe("POST /v1/embeddings", () => {
  it("answers the README's curl with one 384-dimensional unit vector", async () => {
    const res = await embeddings({ model: MINILM, input: ["hello world"] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as EmbeddingsBody;
    expect(body.data).toHaveLength(1);
    const vector = body.data[0]?.embedding as number[];
    expect(vector).toHaveLength(384);
    expect(norm(vector)).toBeCloseTo(1, 5);
    expect(body.usage.prompt_tokens).toBe(4);
    expect(res.headers.get("server-timing")).toMatch(
      /annotate;dur=[\d.]+, queue;dur=[\d.]+, batch;dur=[\d.]+, compute;dur=[\d.]+, total;dur=[\d.]+/,
    );
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("matches sentence-transformers on every fixture sentence, through the whole cluster", async () => {
    const fixture = minilmFixture();
    expect(fixture.length).toBeGreaterThanOrEqual(20);
    const res = await embeddings({ model: MINILM, input: fixture.map((s) => s.text) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as EmbeddingsBody;
    fixture.forEach((sentence, i) => {
      const got = body.data[i];
      expect(got?.index).toBe(i);
      const similarity = cosine(got?.embedding as number[], sentence.embedding);
      expect(similarity, `sentence ${i}: ${sentence.text.slice(0, 40)}`).toBeGreaterThanOrEqual(
        0.9999,
      );
      expect(got?.truncated, `sentence ${i} truncated`).toBe(sentence.truncated);
    });
    expect(body.usage.prompt_tokens).toBe(fixture.reduce((n, s) => n + s.tokens, 0));
  });

  it("matches each fixture sentence sent alone, so batching with others changes nothing", async () => {
    const fixture = minilmFixture();
    const answers = await Promise.all(
      fixture.map(
        async (s) =>
          (await (await embeddings({ model: MINILM, input: s.text })).json()) as EmbeddingsBody,
      ),
    );
    answers.forEach((body, i) => {
      const expected = fixture[i];
      expect(
        cosine(body.data[0]?.embedding as number[], expected?.embedding ?? []),
      ).toBeGreaterThanOrEqual(0.9999);
    });
  });

  it("returns base64 as the little-endian float32 bytes of the float answer", async () => {
    const input = ["base64 and float agree"];
    const floats = (await (await embeddings({ model: MINILM, input })).json()) as EmbeddingsBody;
    const b64 = (await (
      await embeddings({ model: MINILM, input, encoding_format: "base64" })
    ).json()) as EmbeddingsBody;
    const bytes = Buffer.from(b64.data[0]?.embedding as string, "base64");
    expect(bytes.length).toBe(384 * 4);
    const decoded = Array.from({ length: 384 }, (_, i) => bytes.readFloatLE(i * 4));
    // JSON carries each float32 in nine digits, which read back to the same float32.
    expect(decoded).toEqual((floats.data[0]?.embedding as number[]).map(Math.fround));
  });
});

describe("GET /v1/models", () => {
  it("lists the catalog in OpenAI's shape", async () => {
    const res = await fetch(`${cluster.baseUrl}/v1/models`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string; object: string }[] };
    expect(body.object).toBe("list");
    expect(body.data.map((m) => m.id)).toContain(MINILM);
  });
});

describe("bad input never reaches a worker", () => {
  const long = "token ".repeat(400);
  it.each([
    {
      name: "unknown model",
      body: { model: "nope/nope", input: ["x"] },
      status: 404,
      message: /available: sentence-transformers\/all-MiniLM-L6-v2/,
    },
    {
      name: "empty input list",
      body: { model: MINILM, input: [] },
      status: 400,
      message: /input must not be empty/,
    },
    {
      name: "empty string",
      body: { model: MINILM, input: ["ok", ""] },
      status: 400,
      message: /input 1 is an empty string/,
    },
    { name: "missing input", body: { model: MINILM }, status: 400, message: /`input` is required/ },
    {
      name: "input of the wrong type",
      body: { model: MINILM, input: [true, false] },
      status: 400,
      message: /string, an array of strings, an array of token ids/,
    },
    {
      name: "model of the wrong type",
      body: { model: 7, input: ["x"] },
      status: 400,
      message: /`model` is required/,
    },
    {
      name: "bad encoding_format",
      body: { model: MINILM, input: ["x"], encoding_format: "hex" },
      status: 400,
      message: /encoding_format/,
    },
    {
      name: "unsupported dimensions",
      body: { model: MINILM, input: ["x"], dimensions: 12 },
      status: 400,
      message: /dimensions/,
    },
    {
      name: "malformed JSON",
      body: '{"model": "x", input: ]',
      status: 400,
      message: /malformed JSON/,
    },
    { name: "a JSON array body", body: "[1,2]", status: 400, message: /JSON object/ },
    { name: "an empty body", body: "", status: 400, message: /empty/ },
    {
      name: "a body over the limit",
      body: { model: MINILM, input: ["x".repeat(70 * 1024)] },
      status: 413,
      message: /larger than the 65536-byte limit/,
    },
  ])("$name → $status", async ({ body, status, message }) => {
    const before = published;
    const res = await embeddings(body);
    expect(res.status).toBe(status);
    const error = ((await res.json()) as { error: { message: string; type: string } }).error;
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain("\n");
    await spy.flush();
    expect(published).toBe(before);
  });

  it("refuses an input too long for truncate: false, counted exactly where it is tokenized", async () => {
    // Ingress only estimates tokens; the worker decides from the sidecar's count, so the item
    // is queued, and the answer names the input by its place in the request.
    const res = await embeddings({ model: MINILM, input: ["short", long], truncate: false });
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { message: string } }).error;
    expect(error.message).toMatch(/input 1 is longer than the model's 256 tokens/);
  });

  it("truncates by default and reports it per item", async () => {
    const res = await embeddings({ model: MINILM, input: [long, "short"] });
    const body = (await res.json()) as EmbeddingsBody;
    expect(body.data.map((d) => d.truncated)).toEqual([true, false]);
  });

  it("answers an unknown route and a wrong method in OpenAI's error shape", async () => {
    const missing = await fetch(`${cluster.baseUrl}/v1/nothing`);
    expect(missing.status).toBe(404);
    const wrong = await fetch(`${cluster.baseUrl}/v1/embeddings`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
  });
});

describe("limits", () => {
  it("cuts off an undeclared (chunked) body as soon as it passes the limit", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${cluster.baseUrl}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      const chunk = "x".repeat(16 * 1024);
      req.write(`{"model":"${MINILM}","input":["`);
      // Far more than the 64 KiB limit; the server answers before it is all sent.
      for (let i = 0; i < 64; i++) req.write(chunk);
      req.end('"]}');
    });
    expect(status).toBe(413);
  });

  it("answers 429 with Retry-After when ingress holds its maximum of requests", async () => {
    const full = await run({
      natsServers: cluster.nats.url,
      catalog: defaultCatalog(),
      port: 0,
      maxPending: 0,
      logger: createLogger({ service: "ingress", level: "silent" }),
      tracer: trace.getTracer("test"),
    });
    try {
      const before = published;
      const res = await fetch(`http://127.0.0.1:${full.port}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MINILM, input: ["x"] }),
      });
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
      const error = ((await res.json()) as { error: { type: string } }).error;
      expect(error.type).toBe("rate_limit_error");
      await spy.flush();
      expect(published).toBe(before);
    } finally {
      await full.stop();
    }
  });
});

describe("connections", () => {
  it("answers a client that sent its whole request and then closed its sending side", async () => {
    const port = new URL(cluster.baseUrl).port;
    const body = JSON.stringify({ model: MINILM, input: ["half-closed but still listening"] });
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = createConnection(Number(port), "127.0.0.1", () => {
        // end() sends the request and a FIN: the client will write nothing more.
        socket.end(
          `POST /v1/embeddings HTTP/1.1\r\nhost: shoal\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
      });
      let received = "";
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")));
      socket.on("close", () => {
        resolve(received);
      });
      socket.on("error", reject);
    });
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(answer).toContain('"embedding":[');
  });
});
