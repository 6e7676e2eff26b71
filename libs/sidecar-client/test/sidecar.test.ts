import { minilmDir, startSidecar, type SidecarHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SidecarClient, SidecarError, toFloat32Array, type EmbedResult } from "../src/index.js";

// One real sidecar with all-MiniLM-L6-v2 for the whole file: loading weights dominates the
// cost of these tests, and every test here leaves the resident "minilm" as it found it.

let sidecar: SidecarHandle | undefined;
let connection: SidecarClient | undefined;

function client(): SidecarClient {
  if (connection === undefined) throw new Error("sidecar did not start; see the beforeAll error");
  return connection;
}

beforeAll(async () => {
  sidecar = await startSidecar({ models: { minilm: minilmDir() } });
  connection = await SidecarClient.connect({ socketPath: sidecar.socketPath });
}, 180_000);

afterAll(async () => {
  await connection?.close();
  await sidecar?.stop();
});

function rows(result: EmbedResult): Float32Array[] {
  const all = toFloat32Array(result.embeddings);
  return Array.from({ length: result.count }, (_, i) =>
    all.subarray(i * result.dim, (i + 1) * result.dim),
  );
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0);
  return sum;
}

function cosine(a: Float32Array, b: Float32Array): number {
  return dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
}

async function expectSidecarError(
  call: Promise<unknown>,
  code: SidecarError["code"],
): Promise<SidecarError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SidecarError);
  expect((error as SidecarError).code).toBe(code);
  return error as SidecarError;
}

const LONG_TEXT = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");

describe("sidecar client against the real sidecar", { timeout: 120_000 }, () => {
  it("health reports version, backend and device", async () => {
    const health = await client().health();
    expect(health.version).not.toBe("");
    expect(["candle-cpu", "candle-cuda"]).toContain(health.backend);
    expect(health.device).not.toBe("");
  });

  it("embeds sentences as unit-norm 384-dim rows with token counts", async () => {
    const inputs = [
      "hello world",
      "A man is playing a guitar.",
      "Someone plays the guitar.",
      "The stock market fell sharply today.",
    ];
    const result = await client().embed({ model: "minilm", inputs });
    expect(result.dim).toBe(384);
    expect(result.count).toBe(4);
    expect(result.embeddings.byteLength).toBe(4 * 384 * 4);
    // [CLS] hello world [SEP]
    expect(result.tokens[0]).toBe(4);
    expect(result.tokens.every((n) => n >= 4)).toBe(true);
    expect(result.truncated).toEqual([false, false, false, false]);
    expect(result.computeUs).toBeGreaterThan(0);
    const [, guitar, plays, market] = rows(result);
    for (const row of rows(result)) expect(Math.sqrt(dot(row, row))).toBeCloseTo(1, 3);
    if (guitar === undefined || plays === undefined || market === undefined)
      throw new Error("missing rows");
    expect(cosine(guitar, plays)).toBeGreaterThan(0.6);
    expect(cosine(guitar, plays)).toBeGreaterThan(cosine(guitar, market) + 0.3);
  });

  it("gives a sentence the same embedding alone as padded into a batch with a longer one", async () => {
    const sentence = "Batching must not change the answer.";
    const alone = rows(await client().embed({ model: "minilm", inputs: [sentence] }))[0];
    const batched = rows(
      await client().embed({ model: "minilm", inputs: [LONG_TEXT, sentence] }),
    )[1];
    if (alone === undefined || batched === undefined) throw new Error("missing rows");
    expect(cosine(alone, batched)).toBeGreaterThan(0.999);
  });

  it("accepts traceparent and traceparents", async () => {
    const result = await client().embed({
      model: "minilm",
      inputs: ["a", "b"],
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      traceparents: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01",
      ],
    });
    expect(result.count).toBe(2);
  });

  it("answers 20 concurrent embeds each with its own result", async () => {
    const topics = [
      "cats",
      "volcanoes",
      "tax law",
      "jazz",
      "compilers",
      "knitting",
      "glaciers",
      "poker",
      "bread",
      "satellites",
      "tennis",
      "opera",
      "mushrooms",
      "railways",
      "chess",
      "tattoos",
      "submarines",
      "honey",
      "origami",
      "elections",
    ];
    const sentences = topics.map((topic) => `I would like to learn more about ${topic}.`);
    const expected: Float32Array[] = [];
    for (const s of sentences) {
      const row = rows(await client().embed({ model: "minilm", inputs: [s] }))[0];
      if (row === undefined) throw new Error("missing row");
      expected.push(row);
    }
    const calls = sentences.map((s) => client().embed({ model: "minilm", inputs: [s] }));
    expect(client().inFlight).toBe(20);
    const results = await Promise.all(calls);
    results.forEach((result, i) => {
      const row = rows(result)[0];
      if (row === undefined || expected[i] === undefined) throw new Error("missing row");
      expect(cosine(row, expected[i])).toBeGreaterThan(0.999);
      // Each answer must be its own sentence's, not merely some sentence's.
      for (let j = 0; j < 20; j++) {
        const other = expected[j];
        if (j !== i && other !== undefined) expect(cosine(row, other)).toBeLessThan(0.999);
      }
    });
  });

  it("refuses an unknown model with model_not_found", async () => {
    await expectSidecarError(
      client().embed({ model: "no-such-model", inputs: ["x"] }),
      "model_not_found",
    );
  });

  it("refuses empty inputs with bad_request", async () => {
    await expectSidecarError(client().embed({ model: "minilm", inputs: [] }), "bad_request");
  });

  it("refuses a long input with input_too_long when truncate is false, and cuts it by default", async () => {
    await expectSidecarError(
      client().embed({ model: "minilm", inputs: ["short", LONG_TEXT], truncate: false }),
      "input_too_long",
    );
    const cut = await client().embed({ model: "minilm", inputs: ["short", LONG_TEXT] });
    expect(cut.truncated).toEqual([false, true]);
    expect(cut.tokens[1]).toBeGreaterThan(cut.tokens[0] ?? 0);
  });

  it("loads, reports, serves and unloads a second model", async () => {
    const loaded = await client().load("minilm-b", minilmDir(), { timeoutMs: 110_000 });
    expect(loaded).toMatchObject({ model: "minilm-b", family: "embedding", dim: 384 });
    expect(loaded.maxInputTokens).toBeGreaterThan(0);
    expect(loaded.memoryBytes).toBeGreaterThan(10_000_000);

    await expectSidecarError(
      client().load("minilm-b", minilmDir(), { timeoutMs: 110_000 }),
      "model_exists",
    );

    const cut = await client().embed({ model: "minilm-b", inputs: [LONG_TEXT] });
    expect(cut.truncated).toEqual([true]);
    expect(cut.tokens[0]).toBe(loaded.maxInputTokens);

    const stats = await client().stats();
    expect(stats.uptimeUs).toBeGreaterThan(0);
    const b = stats.models.find((m) => m.model === "minilm-b");
    expect(b).toMatchObject({
      family: "embedding",
      batches: 1,
      items: 1,
      tokens: loaded.maxInputTokens,
    });
    expect(stats.models.map((m) => m.model)).toContain("minilm");

    await expect(client().unload("minilm-b")).resolves.toEqual({ model: "minilm-b" });
    await expectSidecarError(
      client().embed({ model: "minilm-b", inputs: ["x"] }),
      "model_not_found",
    );
    expect((await client().stats()).models.map((m) => m.model)).not.toContain("minilm-b");
  });

  it("loads a simulated model that answers like a real one without computing", async () => {
    const loaded = await client().load("fake", undefined, {
      backend: "sim",
      sim: { dim: 16, memoryBytes: 40_000_000_000, fixedUs: 20_000, perPaddedTokenNs: 0 },
    });
    expect(loaded).toMatchObject({
      model: "fake",
      family: "embedding",
      dim: 16,
      maxInputTokens: 256,
      memoryBytes: 40_000_000_000,
    });
    const inputs = ["hello world", "other", "hello world"];
    const result = await client().embed({ model: "fake", inputs });
    expect(result.dim).toBe(16);
    const [a, b, c] = rows(result);
    if (a === undefined || b === undefined || c === undefined) throw new Error("three rows");
    expect(Math.sqrt(dot(a, a))).toBeCloseTo(1, 5);
    expect(Array.from(c)).toEqual(Array.from(a));
    expect(cosine(a, b)).toBeLessThan(0.9);
    // The model thread slept the predicted 20 ms rather than computing.
    expect(result.computeUs).toBeGreaterThanOrEqual(20_000);
    const stats = await client().stats();
    expect(stats.models.find((m) => m.model === "fake")).toMatchObject({
      memoryBytes: 40_000_000_000,
      batches: 1,
    });
    await expectSidecarError(
      client().load("bad", undefined, { backend: "sim", sim: { fixedUs: -1 } }),
      "bad_request",
    );
    await expect(client().unload("fake")).resolves.toEqual({ model: "fake" });
  });

  it("reports load_failed for a directory without a model", async () => {
    await expectSidecarError(client().load("broken", "/nonexistent/model-dir"), "load_failed");
  });

  it("reports model_not_found when unloading a model that is not resident", async () => {
    await expectSidecarError(client().unload("never-loaded"), "model_not_found");
  });
});
