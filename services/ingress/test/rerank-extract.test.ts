import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { InferenceService } from "@shoal/proto";
import { repoRoot, TINY, tinyHeadsCatalogDocument } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGenerationCluster, type GenerationCluster } from "./support/generation-cluster.js";
import {
  grpcError,
  inferenceStub,
  unary,
  type InferenceStub,
  type UnaryMethod,
} from "./support/grpc-js.js";
import { runPytest } from "./support/pytest.js";

// Rerank, classify and extract through the whole cluster (ingress, which annotates in process,
// → JetStream → worker → real sidecar) with the tiny generated models, checked against the
// transformers reference outputs of tools/reference/make_tiny_models.py.

const FIXTURES = join(repoRoot(), "tools", "reference", "fixtures");
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(FIXTURES, `tiny-${name}.json`), "utf8"));

interface Pair {
  query: string;
  document: string;
  score: number;
}

let cluster: GenerationCluster;
let rpc: Client<typeof InferenceService>;

beforeAll(async () => {
  cluster = await startGenerationCluster({ catalog: tinyHeadsCatalogDocument() });
  rpc = createClient(
    InferenceService,
    createConnectTransport({ baseUrl: cluster.baseUrl, httpVersion: "1.1" }),
  );
}, 360_000);

afterAll(async () => {
  await cluster.stop();
});

async function post(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${cluster.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe("POST /v1/rerank", { timeout: 120_000 }, () => {
  const { pairs } = fixture("cross-encoder") as { pairs: Pair[] };
  const query = pairs[0]?.query ?? "";
  const sameQuery = pairs.filter((p) => p.query === query);

  it("ranks documents by the reference's scores, in the Cohere/Jina shape", async () => {
    const { status, json } = await post("/v1/rerank", {
      model: TINY.crossEncoder,
      query,
      documents: sameQuery.map((p) => p.document),
      return_documents: true,
    });
    expect(status).toBe(200);
    const body = json as {
      model: string;
      results: { index: number; relevance_score: number; document: { text: string } }[];
      usage: { total_tokens: number };
    };
    expect(body.model).toBe(TINY.crossEncoder);
    expect(body.results).toHaveLength(sameQuery.length);
    const expected = sameQuery
      .map((p, index) => ({ index, score: p.score }))
      .sort((a, b) => b.score - a.score);
    expect(body.results.map((r) => r.index)).toEqual(expected.map((e) => e.index));
    for (const r of body.results) {
      expect(r.relevance_score).toBeCloseTo(sameQuery[r.index]?.score ?? NaN, 4);
      expect(r.document.text).toBe(sameQuery[r.index]?.document);
    }
    expect(body.usage.total_tokens).toBeGreaterThan(0);
  });

  it("keeps top_n and accepts {text} documents", async () => {
    const { json } = await post("/v1/rerank", {
      model: TINY.crossEncoder,
      query,
      documents: sameQuery.map((p) => ({ text: p.document })),
      top_n: 1,
    });
    const body = json as { results: { index: number; document?: unknown }[] };
    expect(body.results).toHaveLength(1);
    expect(body.results[0]?.document).toBeUndefined();
  });

  it("answers Connect Score with one score per document, in order", async () => {
    const res = await rpc.score({
      model: TINY.crossEncoder,
      query,
      documents: sameQuery.map((p) => p.document),
    });
    res.scores.forEach((s, i) => {
      expect(s).toBeCloseTo(sameQuery[i]?.score ?? NaN, 4);
    });
  });

  it.each<[string, Record<string, unknown>, number, RegExp]>([
    ["missing documents", { model: TINY.crossEncoder, query: "q" }, 400, /`documents` is required/],
    [
      "a document of the wrong type",
      { model: TINY.crossEncoder, query: "q", documents: [3] },
      400,
      /documents\[0\]/,
    ],
    [
      "an empty documents list",
      { model: TINY.crossEncoder, query: "q", documents: [] },
      400,
      /must not be empty/,
    ],
    [
      "a bad top_n",
      { model: TINY.crossEncoder, query: "q", documents: ["a"], top_n: 0 },
      400,
      /top_n/,
    ],
    [
      "a model of another family",
      { model: TINY.ner, query: "q", documents: ["a"] },
      400,
      /not a reranker/,
    ],
    ["an unknown model", { model: "nope", query: "q", documents: ["a"] }, 404, /not served here/],
  ])("refuses %s", async (_what, body, status, message) => {
    const res = await post("/v1/rerank", body);
    expect(res.status).toBe(status);
    expect((res.json as { error: { message: string } }).error.message).toMatch(message);
  });
});

describe("POST /v1/extract", { timeout: 120_000 }, () => {
  it("finds the reference's entities with a NER model", async () => {
    const { inputs } = fixture("ner") as {
      inputs: {
        text: string;
        entities: { label: string; text: string; start: number; end: number; score: number }[];
      }[];
    };
    const { status, json } = await post("/v1/extract", {
      model: TINY.ner,
      input: inputs.map((i) => i.text),
    });
    expect(status).toBe(200);
    const body = json as {
      data: { index: number; entities: (typeof inputs)[number]["entities"] }[];
    };
    inputs.forEach((input, i) => {
      const got = body.data[i]?.entities ?? [];
      expect(got.map(({ label, text, start, end }) => [label, text, start, end])).toEqual(
        input.entities.map(({ label, text, start, end }) => [label, text, start, end]),
      );
      got.forEach((e, j) => {
        expect(e.score).toBeCloseTo(input.entities[j]?.score ?? NaN, 4);
      });
    });
  });

  it("labels each input with a classifier, most probable first", async () => {
    const { labels, inputs } = fixture("classifier") as {
      labels: string[];
      inputs: { text: string; probabilities: number[] }[];
    };
    const { json } = await post("/v1/extract", {
      model: TINY.classifier,
      input: inputs.map((i) => i.text),
    });
    const body = json as { data: { labels: { label: string; probability: number }[] }[] };
    inputs.forEach((input, i) => {
      const got = body.data[i]?.labels ?? [];
      const expected = labels
        .map((label, j) => ({ label, probability: input.probabilities[j] ?? NaN }))
        .sort((a, b) => b.probability - a.probability);
      expect(got.map((l) => l.label)).toEqual(expected.map((l) => l.label));
      got.forEach((l, j) => {
        expect(l.probability).toBeCloseTo(expected[j]?.probability ?? NaN, 4);
      });
    });
  });

  it("answers Connect Extract with entities per input", async () => {
    const res = await rpc.extract({ model: TINY.ner, inputs: ["Angela Merkel visited Paris."] });
    expect(res.results).toHaveLength(1);
  });

  it("refuses input of the wrong type and a deadline already past", async () => {
    const res = await post("/v1/extract", { model: TINY.ner, input: [1, 2] });
    expect(res.status).toBe(400);
    const err = await rpc
      .extract({ model: TINY.ner, inputs: ["x"] }, { timeoutMs: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
  });
});

describe("@grpc/grpc-js client", { timeout: 120_000 }, () => {
  const { pairs } = fixture("cross-encoder") as { pairs: Pair[] };
  const query = pairs[0]?.query ?? "";
  const sameQuery = pairs.filter((p) => p.query === query);
  let stub: InferenceStub;

  beforeAll(() => {
    stub = inferenceStub(cluster.baseUrl);
  });

  afterAll(() => {
    stub.close();
  });

  it("calls Score and gets the reference's scores in document order", async () => {
    const res = await unary<{ model: string; scores: number[]; usage: { inputTokens: number } }>(
      stub,
      "Score",
      { model: TINY.crossEncoder, query, documents: sameQuery.map((p) => p.document) },
      { deadline: Date.now() + 60_000 },
    );
    expect(res.model).toBe(TINY.crossEncoder);
    expect(res.scores).toHaveLength(sameQuery.length);
    res.scores.forEach((s, i) => {
      expect(s).toBeCloseTo(sameQuery[i]?.score ?? NaN, 4);
    });
    expect(res.usage.inputTokens).toBeGreaterThan(0);
  });

  it("calls Extract and gets the reference's entities with their offsets", async () => {
    const { inputs } = fixture("ner") as {
      inputs: { text: string; entities: { label: string; start: number; end: number }[] }[];
    };
    const res = await unary<{
      results: { entities: { label: string; start: number; end: number }[] }[];
    }>(stub, "Extract", { model: TINY.ner, inputs: inputs.map((i) => i.text) });
    expect(res.results).toHaveLength(inputs.length);
    inputs.forEach((input, i) => {
      const got = res.results[i]?.entities ?? [];
      expect(got.map(({ label, start, end }) => [label, start, end])).toEqual(
        input.entities.map(({ label, start, end }) => [label, start, end]),
      );
    });
  });

  it("calls Extract on a classifier and gets labels, most probable first", async () => {
    const { inputs } = fixture("classifier") as { inputs: { text: string }[] };
    const res = await unary<{ results: { labels: { probability: number }[] }[] }>(stub, "Extract", {
      model: TINY.classifier,
      inputs: [inputs[0]?.text ?? ""],
    });
    const probabilities = res.results[0]?.labels.map((l) => l.probability) ?? [];
    expect(probabilities.length).toBeGreaterThan(1);
    expect(probabilities).toEqual([...probabilities].sort((a, b) => b - a));
  });

  it.each<[string, UnaryMethod, object, grpc.status]>([
    [
      "Score on a NER model",
      "Score",
      { model: TINY.ner, query: "q", documents: ["a"] },
      grpc.status.INVALID_ARGUMENT,
    ],
    [
      "Score with no documents",
      "Score",
      { model: TINY.crossEncoder, query: "q" },
      grpc.status.INVALID_ARGUMENT,
    ],
    [
      "Extract on an unknown model",
      "Extract",
      { model: "nope", inputs: ["x"] },
      grpc.status.NOT_FOUND,
    ],
  ])("answers %s with the right status code", async (_what, method, req, code) => {
    const err = await grpcError(unary(stub, method, req));
    expect(err.code).toBe(code);
  });

  it("answers DEADLINE_EXCEEDED for an Extract whose deadline is already past", async () => {
    const err = await grpcError(
      unary(stub, "Extract", { model: TINY.ner, inputs: ["x"] }, { deadline: Date.now() - 1 }),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });
});

describe("Python grpcio client (tools/clients-py/heads)", { timeout: 120_000 }, () => {
  it("passes pytest: Score and Extract against the reference outputs", async () => {
    const { code, output } = await runPytest(["tools/clients-py/heads"], cluster.baseUrl);
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
  });
});
