import { join } from "node:path";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { InferenceService, ModelFamily } from "@shoal/proto";
import { repoRoot } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine, minilmFixture, norm } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

let cluster: TestCluster;

beforeAll(async () => {
  // The annotator runs as its own service here, so this file covers the remote hop.
  cluster = await startCluster({ annotator: "remote" });
});

afterAll(async () => {
  await cluster.stop();
});

interface GrpcEmbedding {
  values: number[];
  tokens: number;
  truncated: boolean;
}
interface GrpcEmbedResponse {
  model: string;
  embeddings: GrpcEmbedding[];
}
interface InferenceStub extends grpc.Client {
  Embed(
    req: { model: string; inputs: string[] },
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    cb: grpc.requestCallback<GrpcEmbedResponse>,
  ): grpc.ClientUnaryCall;
}

function grpcEmbed(
  stub: InferenceStub,
  req: { model: string; inputs: string[] },
  options: grpc.CallOptions = {},
): Promise<GrpcEmbedResponse> {
  return new Promise((resolve, reject) => {
    stub.Embed(req, new grpc.Metadata(), options, (err, res) => {
      if (err !== null || res === undefined) reject(err ?? new Error("empty response"));
      else resolve(res);
    });
  });
}

/** A stub generated at run time from proto/ by @grpc/grpc-js, as a polyglot client would. */
function grpcStub(): InferenceStub {
  const definition = protoLoader.loadSync(
    join(repoRoot(), "proto", "shoal", "inference", "v1", "inference.proto"),
    {
      includeDirs: [join(repoRoot(), "proto")],
      defaults: true,
    },
  );
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    shoal: { inference: { v1: { InferenceService: grpc.ServiceClientConstructor } } };
  };
  const url = cluster.baseUrl.replace("http://", "");
  return new pkg.shoal.inference.v1.InferenceService(
    url,
    grpc.credentials.createInsecure(),
  ) as never;
}

describe("@grpc/grpc-js client", () => {
  it("calls Embed over HTTP/2 and gets the reference vectors", async () => {
    const stub = grpcStub();
    const fixture = minilmFixture().slice(0, 5);
    const res = await grpcEmbed(
      stub,
      { model: MINILM, inputs: fixture.map((s) => s.text) },
      {
        deadline: Date.now() + 30_000,
      },
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
    const stub = grpcStub();
    const err = (await grpcEmbed(stub, { model: "nope", inputs: ["x"] }).catch(
      (e: unknown) => e,
    )) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    // connect-node percent-encodes grpc-message more eagerly than grpc-js's decodeURI undoes.
    expect(decodeURIComponent(err.details)).toMatch(
      /available: sentence-transformers\/all-MiniLM-L6-v2/,
    );
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

  it("answers a malformed protobuf body with gRPC's INTERNAL and keeps serving", async () => {
    // connect-es reports an unparseable binary message as INTERNAL, as grpc-go and the gRPC
    // status-code table do; the reason stays one line and the process keeps serving.
    const res = await fetch(`${cluster.baseUrl}/shoal.inference.v1.InferenceService/Embed`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: new Uint8Array([0x0a, 0xff, 0xff, 0xff]),
    });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("internal");
    expect(body.message).toMatch(/^parse binary: [^\n]+$/);
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
