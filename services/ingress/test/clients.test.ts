import OpenAI, { BadRequestError, NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { norm } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";
import { runPytest } from "./support/pytest.js";

// The clients users arrive with, unmodified, against one real cluster: the official `openai`
// npm package here, and the official Python `openai` SDK and a `grpcio` client generated from
// proto/ in tools/clients-py, run by pytest from the venv tools/setup/python-clients.sh makes.

let cluster: TestCluster;
let client: OpenAI;

beforeAll(async () => {
  cluster = await startCluster();
  // Shoal asks for no key, but the SDK requires one. No retries: a 5xx must fail the test, not
  // be hidden behind a second attempt.
  client = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
});

afterAll(async () => {
  await cluster.stop();
});

const INPUTS = ["hello world", "the cluster pulls its own batches"];

describe("openai npm SDK", () => {
  it("creates float embeddings", async () => {
    const res = await client.embeddings.create({
      model: MINILM,
      input: INPUTS,
      encoding_format: "float",
    });
    expect(res.model).toBe(MINILM);
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    for (const d of res.data) {
      expect(d.embedding).toHaveLength(384);
      expect(norm(d.embedding)).toBeCloseTo(1, 5);
    }
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    expect(res.usage.total_tokens).toBe(res.usage.prompt_tokens);
  });

  it("decodes the base64 it asks for by default into the float vectors", async () => {
    const floats = await client.embeddings.create({
      model: MINILM,
      input: INPUTS,
      encoding_format: "float",
    });
    // Without encoding_format the SDK requests base64 and decodes it itself.
    const decoded = await client.embeddings.create({ model: MINILM, input: INPUTS });
    // JSON writes float32 in nine digits, which read back to the same float32.
    expect(decoded.data.map((d) => Array.from(d.embedding))).toEqual(
      floats.data.map((d) => d.embedding.map(Math.fround)),
    );
  });

  it("returns explicit base64 as little-endian float32 bytes of the float vectors", async () => {
    const floats = await client.embeddings.create({
      model: MINILM,
      input: INPUTS,
      encoding_format: "float",
    });
    const b64 = await client.embeddings.create({
      model: MINILM,
      input: INPUTS,
      encoding_format: "base64",
    });
    b64.data.forEach((d, i) => {
      // Asked for explicitly, the SDK hands the string over untouched.
      expect(typeof d.embedding).toBe("string");
      const bytes = Buffer.from(d.embedding as unknown as string, "base64");
      expect(bytes.length).toBe(384 * 4);
      const values = Array.from({ length: 384 }, (_, j) => bytes.readFloatLE(j * 4));
      // The JSON answer carries float32 in nine digits, which read back to the same float32.
      expect(values).toEqual(floats.data[i]?.embedding.map(Math.fround));
    });
  });

  it("lists the models", async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      expect(model.object).toBe("model");
      ids.push(model.id);
    }
    expect(ids).toContain(MINILM);
  });

  it("raises NotFoundError with our message for an unknown model", async () => {
    const err = await client.embeddings
      .create({ model: "nope/nope", input: ["x"] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).status).toBe(404);
    expect((err as NotFoundError).message).toMatch(
      /model "nope\/nope" is not served here; available: sentence-transformers\/all-MiniLM-L6-v2/,
    );
  });

  it("raises BadRequestError for an empty input list", async () => {
    const err = await client.embeddings
      .create({ model: MINILM, input: [] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).status).toBe(400);
    expect((err as BadRequestError).message).toMatch(/input must not be empty/);
  });
});

describe("Python clients (tools/clients-py)", () => {
  it("pass pytest: the openai SDK and a grpcio client generated from proto/", async () => {
    // Ingress runs in this process, so a rejection it leaves unhandled (which would end a real
    // ingress process) shows up here rather than as a refused connection in pytest.
    const unhandled: string[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason instanceof Error ? (reason.stack ?? reason.message) : String(reason));
    };
    process.on("unhandledRejection", onUnhandled);
    let result: { code: number | null; output: string };
    try {
      // generation/, heads/ and adapters/ need models this cluster does not serve, auth/ and
      // tls/ a cluster with keys or TLS; openai-generation, rerank-extract, adapters, auth and
      // tls tests run them on clusters that have them.
      result = await runPytest(
        [
          "tools/clients-py",
          "--ignore=tools/clients-py/generation",
          "--ignore=tools/clients-py/heads",
          "--ignore=tools/clients-py/adapters",
          "--ignore=tools/clients-py/auth",
          "--ignore=tools/clients-py/tls",
        ],
        cluster.baseUrl,
      );
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    const { code, output } = result;
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
    expect(output, output).toMatch(/\b\d+ passed\b/);
    expect(output, output).not.toMatch(/skipped|xfail|xpass|deselected/);
    expect(unhandled, "ingress left rejections unhandled while serving the Python clients").toEqual(
      [],
    );
  }, 180_000);
});
