import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { InferenceService, ModelFamily } from "@shoal/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine, minilmFixture, norm } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";
import { grpcError, inferenceStub, unary } from "./support/grpc-js.js";

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
});

afterAll(async () => {
  await cluster.stop();
});

interface GrpcEmbedResponse {
  model: string;
  embeddings: { values: number[]; tokens: number; truncated: boolean }[];
}

describe("@grpc/grpc-js client", () => {
  it("calls Embed over HTTP/2 and gets the reference vectors", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    const fixture = minilmFixture().slice(0, 5);
    const res = await unary<GrpcEmbedResponse>(
      stub,
      "Embed",
      { model: MINILM, inputs: fixture.map((s) => s.text) },
      { deadline: Date.now() + 30_000 },
    );
    expect(res.model).toBe(MINILM);
    expect(res.embeddings).toHaveLength(fixture.length);
    res.embeddings.forEach((e, i) => {
      expect(e.values).toHaveLength(384);
      expect(cosine(e.values, fixture[i]?.embedding ?? [])).toBeGreaterThanOrEqual(0.9999);
    });
    stub.close();
  });

  it("gets NOT_FOUND naming the available models for an unknown model", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    const err = await grpcError(unary(stub, "Embed", { model: "nope", inputs: ["x"] }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    // connect-node percent-encodes grpc-message more eagerly than grpc-js's decodeURI undoes.
    expect(decodeURIComponent(err.details)).toMatch(
      /available: sentence-transformers\/all-MiniLM-L6-v2/,
    );
    stub.close();
  });

  it("gets INVALID_ARGUMENT for a prompt_name the model does not have", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    const err = await grpcError(
      unary(stub, "Embed", { model: MINILM, inputs: ["x"], promptName: "query" }),
    );
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(decodeURIComponent(err.details)).toMatch(/has no prompts/);
    stub.close();
  });

  it("lists the catalog with ListModels", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    const res = await unary<{ models: { id: string; family: string; dimensions: number }[] }>(
      stub,
      "ListModels",
      {},
    );
    expect(res.models).toContainEqual(
      expect.objectContaining({ id: MINILM, family: "MODEL_FAMILY_EMBEDDING", dimensions: 384 }),
    );
    stub.close();
  });

  it("gets INVALID_ARGUMENT for empty inputs and keeps serving the same channel", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    const err = await grpcError(unary(stub, "Embed", { model: MINILM, inputs: [] }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const res = await unary<GrpcEmbedResponse>(stub, "Embed", { model: MINILM, inputs: ["ok"] });
    expect(res.embeddings).toHaveLength(1);
    stub.close();
  });
});

describe("Connect clients", () => {
  const transports = {
    "Connect over HTTP/1.1": () =>
      createConnectTransport({ baseUrl: cluster.baseUrl, httpVersion: "1.1" }),
    "Connect over HTTP/2": () =>
      createConnectTransport({ baseUrl: cluster.baseUrl, httpVersion: "2" }),
    "gRPC (connect-node)": () => createGrpcTransport({ baseUrl: cluster.baseUrl }),
    "gRPC-Web over HTTP/1.1": () =>
      createGrpcWebTransport({ baseUrl: cluster.baseUrl, httpVersion: "1.1" }),
  };

  it.each(Object.entries(transports))(
    "%s: Embed returns unit vectors and Server-Timing",
    async (_name, transport) => {
      const client: Client<typeof InferenceService> = createClient(InferenceService, transport());
      let timing: string | null = null;
      const res = await client.embed(
        { model: MINILM, inputs: ["hello world", "the cluster pulls its own batches"] },
        { onHeader: (h) => (timing = h.get("server-timing")), timeoutMs: 30_000 },
      );
      expect(res.embeddings).toHaveLength(2);
      for (const e of res.embeddings) {
        expect(e.values).toHaveLength(384);
        expect(norm(e.values)).toBeCloseTo(1, 5);
      }
      expect(res.embeddings[0]?.tokens).toBe(4);
      expect(res.usage?.inputTokens).toBeGreaterThan(4);
      expect(timing).toMatch(/queue;dur=/);
    },
  );

  it("ListModels describes the catalog", async () => {
    const client = createClient(InferenceService, transports["Connect over HTTP/1.1"]());
    const res = await client.listModels({});
    expect(res.models).toContainEqual(
      expect.objectContaining({
        id: MINILM,
        family: ModelFamily.EMBEDDING,
        dimensions: 384,
        maxInputTokens: 256,
      }),
    );
  });

  it.each([
    { name: "empty inputs", req: { model: MINILM, inputs: [] }, code: Code.InvalidArgument },
    { name: "an empty string", req: { model: MINILM, inputs: [""] }, code: Code.InvalidArgument },
    { name: "unknown model", req: { model: "nope", inputs: ["x"] }, code: Code.NotFound },
    {
      name: "too long with truncate: false",
      req: { model: MINILM, inputs: ["word ".repeat(300)], truncate: false },
      code: Code.InvalidArgument,
    },
  ])("$name → $code", async ({ req, code }) => {
    const client = createClient(InferenceService, transports["Connect over HTTP/1.1"]());
    const err = await client.embed(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(code);
  });

  it("answers a malformed JSON body with INVALID_ARGUMENT and a one-line reason", async () => {
    const res = await fetch(`${cluster.baseUrl}/shoal.inference.v1.InferenceService/Embed`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"model": "x", "inputs": [',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).not.toContain("\n");
  });

  it("answers an unknown path and an unknown RPC with a JSON error body", async () => {
    for (const path of ["/nope", "/shoal.inference.v1.InferenceService/Nope"]) {
      const res = await fetch(`${cluster.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe("application/json");
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe("not_found");
      expect(body.message).toContain(path);
    }
  });

  it("answers a wrong method on an RPC's path with 405, Allow: POST and a JSON error body", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await fetch(`${cluster.baseUrl}/shoal.inference.v1.InferenceService/Embed`, {
        method,
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe("unimplemented");
      expect(body.message).toContain(`${method} is not allowed`);
    }
    // An unknown path stays a 404 whatever the method.
    expect((await fetch(`${cluster.baseUrl}/nope`)).status).toBe(404);
  });

  it.each([
    ["a body that is not protobuf", new Uint8Array([0x0a, 0xff, 0xff, 0xff])],
    ["invalid UTF-8 in a string field", new Uint8Array([0x0a, 0x02, 0xff, 0xfe])],
  ])("answers %s with INVALID_ARGUMENT over Connect and gRPC-Web", async (_name, message) => {
    // The client's mistake, like malformed JSON: 400, never `internal` (patches/README.md).
    const connect = await fetch(`${cluster.baseUrl}/shoal.inference.v1.InferenceService/Embed`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: message,
    });
    expect(connect.status).toBe(400);
    const body = (await connect.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/^parse binary: [^\n]+$/);

    const frame = new Uint8Array(5 + message.byteLength);
    new DataView(frame.buffer).setUint32(1, message.byteLength);
    frame.set(message, 5);
    const web = await fetch(`${cluster.baseUrl}/shoal.inference.v1.InferenceService/Embed`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: frame,
    });
    const trailers = Buffer.from(await web.arrayBuffer()).toString("latin1");
    expect(web.headers.get("grpc-status") ?? trailers).toMatch(/grpc-status:\s*3|^3$/);

    const client = createClient(InferenceService, transports["Connect over HTTP/1.1"]());
    await expect(client.listModels({})).resolves.toBeDefined();
  });

  it("answers INVALID_ARGUMENT, naming the model's family, for a task the model does not do", async () => {
    const client = createClient(InferenceService, transports["Connect over HTTP/1.1"]());
    const err = await client
      .score({ model: MINILM, query: "q", documents: ["d"] })
      .catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/family "embedding", not a reranker/);
  });
});
