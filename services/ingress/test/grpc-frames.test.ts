import { connect, type ClientHttp2Session } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EmbedRequestSchema, EmbedResponseSchema } from "@shoal/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";
import { inferenceStub, unary } from "./support/grpc-js.js";

// gRPC Embed calls as raw HTTP/2 frames, the way a broken or hostile client can send them:
// ingress answers unary gRPC Embed on its own path (src/grpc/embed.ts), so each refusal must
// be a gRPC status in the protocol's own shape, and the process must keep serving.

let cluster: TestCluster;
let session: ClientHttp2Session;

beforeAll(async () => {
  cluster = await startCluster({ maxBodyBytes: 64 * 1024 });
  session = connect(cluster.baseUrl);
});

afterAll(async () => {
  session.close();
  await cluster.stop();
});

const EMBED = "/shoal.inference.v1.InferenceService/Embed";

interface RawAnswer {
  readonly status: string | undefined;
  readonly message: string | undefined;
  readonly body: Buffer;
  readonly headers: Record<string, unknown>;
}

/** One call: `body` as sent (already framed, or not), the gRPC status from headers or trailers. */
function call(
  body: Uint8Array,
  headers: Record<string, string> = {},
  path = EMBED,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    let head: Record<string, unknown> = {};
    let tail: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      head = { ...h };
    });
    stream.on("trailers", (t: Record<string, unknown>) => {
      tail = { ...t };
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("close", () => {
      const pick = (k: string) => (tail[k] ?? head[k]) as string | undefined;
      resolve({
        status: pick("grpc-status"),
        message: pick("grpc-message"),
        body: Buffer.concat(chunks),
        headers: head,
      });
    });
    stream.end(body);
  });
}

function framed(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.byteLength);
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, 5);
  return out;
}

const request = (inputs: string[]) =>
  toBinary(EmbedRequestSchema, create(EmbedRequestSchema, { model: MINILM, inputs }));

describe("gRPC Embed as raw frames", () => {
  it("answers a well-formed call with one message, status 0 and the timing headers", async () => {
    const answer = await call(framed(request(["hello world"])));
    expect(answer.status).toBe("0");
    expect(answer.headers["server-timing"]).toMatch(/compute;dur=/);
    expect(answer.headers["x-request-id"]).toBeTypeOf("string");
    const response = fromBinary(EmbedResponseSchema, answer.body.subarray(5));
    expect(answer.body.readUInt32BE(1)).toBe(answer.body.length - 5);
    expect(response.embeddings[0]?.values).toHaveLength(384);
    expect(response.embeddings[0]?.tokens).toBe(4);
  });

  it.each([
    ["a message that is not protobuf", framed(new Uint8Array([0x0a, 0xff, 0xff, 0xff]))],
    ["invalid UTF-8 in a string field", framed(new Uint8Array([0x0a, 0x02, 0xff, 0xfe]))],
    ["a body shorter than its frame says", Buffer.from([0, 0, 0, 0, 9, 1, 2])],
    ["a compressed flag with no grpc-encoding", Buffer.from([1, 0, 0, 0, 0])],
    [
      "two messages for a unary call",
      Buffer.concat([framed(request(["a"])), framed(request(["b"]))]),
    ],
    ["no frame at all", Buffer.from([0, 0])],
  ])("answers %s with INVALID_ARGUMENT", async (_name, body) => {
    const answer = await call(body);
    expect(answer.status).toBe("3");
    expect(answer.message).not.toContain("\n");
  });

  it.each([
    ["a message that is not protobuf", framed(new Uint8Array([0x0a, 0xff, 0xff, 0xff]))],
    ["invalid UTF-8 in a string field", framed(new Uint8Array([0x0a, 0x02, 0xff, 0xfe]))],
  ])(
    "answers %s to the RPCs the Connect adapter serves with INVALID_ARGUMENT too",
    async (_name, body) => {
      for (const rpc of ["Score", "Extract"]) {
        const answer = await call(body, {}, `/shoal.inference.v1.InferenceService/${rpc}`);
        expect(answer.status, rpc).toBe("3");
        expect(answer.message, rpc).toMatch(/^parse%20binary/);
      }
    },
  );

  it("takes a deadline in microseconds, as grpc-go sends it", async () => {
    const answer = await call(framed(request(["x"])), { "grpc-timeout": "9999874u" });
    expect(answer.status).toBe("0");
  });

  it("answers a malformed grpc-timeout with INVALID_ARGUMENT", async () => {
    const answer = await call(framed(request(["x"])), { "grpc-timeout": "soon" });
    expect(answer.status).toBe("3");
    expect(answer.message).toMatch(/grpc-timeout/);
  });

  it("refuses a message over the body limit with INVALID_ARGUMENT, not buffering the rest", async () => {
    const answer = await call(framed(new Uint8Array(200 * 1024)));
    expect(answer.status).toBe("3");
    expect(decodeURIComponent(answer.message ?? "")).toMatch(/65536-byte limit/);
  });

  it("answers NOT_FOUND, percent-encoding the message, for an unknown model", async () => {
    const body = toBinary(
      EmbedRequestSchema,
      create(EmbedRequestSchema, { model: "nö-such model", inputs: ["x"] }),
    );
    const answer = await call(framed(body));
    expect(answer.status).toBe("5");
    expect(answer.message).toContain("n%C3%B6-such");
  });

  it("keeps serving real clients after all of the above, and after a cancelled call", async () => {
    const stream = session.request({
      ":method": "POST",
      ":path": EMBED,
      "content-type": "application/grpc",
    });
    stream.write(framed(request(["cancelled before it is answered"])));
    stream.close();
    const stub = inferenceStub(cluster.baseUrl);
    try {
      const res = await unary<{ embeddings: unknown[] }>(stub, "Embed", {
        model: MINILM,
        inputs: ["still here"],
      });
      expect(res.embeddings).toHaveLength(1);
    } finally {
      stub.close();
    }
  });
});

describe("a declared body over the limit, on every RPC protocol", () => {
  const big = Buffer.alloc(100 * 1024, 0x61);

  it.each([
    ["Connect JSON", "application/json"],
    ["Connect binary", "application/proto"],
  ])("%s: HTTP 413 with Connect's invalid_argument, before the body is read", async (_n, type) => {
    const res = await fetch(`${cluster.baseUrl}${EMBED}`, {
      method: "POST",
      headers: { "content-type": type },
      body: big,
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/65536-byte limit/);
  });

  it("gRPC-Web: grpc-status INVALID_ARGUMENT", async () => {
    const res = await fetch(`${cluster.baseUrl}${EMBED}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: framed(big),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("grpc-status")).toBe("3");
    await res.arrayBuffer();
  });

  it("gRPC with a content-length: grpc-status INVALID_ARGUMENT", async () => {
    const answer = await call(framed(big), { "content-length": String(big.length + 5) });
    expect(answer.status).toBe("3");
  });
});
