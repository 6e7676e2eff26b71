import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SidecarClient } from "./client.js";
import { ScriptedSidecar } from "../test/support/scripted-sidecar.js";
import { FrameTooLargeError } from "./frame-too-large-error.js";
import { SidecarError } from "./sidecar-error.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";
import { SidecarTimeoutError } from "./sidecar-timeout-error.js";
import { SidecarUnavailableError } from "./sidecar-unavailable-error.js";

function embedReply(id: unknown, rows: number, dim: number, fill: number): object {
  const floats = new Float32Array(rows * dim).fill(fill);
  return {
    id,
    ok: true,
    dim,
    count: rows,
    embeddings: new Uint8Array(floats.buffer),
    tokens: Array.from({ length: rows }, () => 3),
    truncated: Array.from({ length: rows }, () => false),
    queue_us: 5,
    compute_us: 50,
  };
}

const healthReply = (id: unknown): object => ({
  id,
  ok: true,
  version: "0.1.0",
  backend: "candle-cpu",
  device: "cpu",
});

let dir: string;
let peer: ScriptedSidecar;
let client: SidecarClient;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "shoal-client-spec-"));
  peer = await ScriptedSidecar.start(dir);
  client = await SidecarClient.connect({ socketPath: peer.socketPath, requestTimeoutMs: 2000 });
});

afterEach(async () => {
  await client.close();
  await peer.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("SidecarClient requests", () => {
  it("sends id, op and traceparent, and parses the response", async () => {
    peer.onRequest = (req, p) => {
      p.send(healthReply(req.id));
    };
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await expect(client.health({ traceparent })).resolves.toEqual({
      version: "0.1.0",
      backend: "candle-cpu",
      device: "cpu",
    });
    expect(peer.requests[0]).toEqual({ id: 1, op: "health", traceparent });
  });

  it("leaves unset optional fields out of the frame", async () => {
    peer.onRequest = (req, p) => {
      p.send(embedReply(req.id, 1, 2, 0));
    };
    await client.embed({ model: "m", inputs: ["x"] });
    expect(Object.keys(peer.requests[0] ?? {}).sort()).toEqual(["id", "inputs", "model", "op"]);
  });

  it("passes embed options through", async () => {
    peer.onRequest = (req, p) => {
      p.send(embedReply(req.id, 2, 2, 0));
    };
    await client.embed({
      model: "m",
      inputs: ["a", "b"],
      truncate: false,
      traceparents: ["t1", "t2"],
      traceparent: "t0",
    });
    expect(peer.requests[0]).toEqual({
      id: 1,
      op: "embed",
      model: "m",
      inputs: ["a", "b"],
      truncate: false,
      traceparents: ["t1", "t2"],
      traceparent: "t0",
    });
  });

  it("sends load, unload and stats fields and parses their responses", async () => {
    peer.onRequest = (req, p) => {
      if (req.op === "load") {
        p.send({
          id: req.id,
          ok: true,
          model: req.model,
          family: "embedding",
          dim: 384,
          max_input_tokens: 256,
          memory_bytes: 90,
          load_us: 7,
        });
      } else if (req.op === "unload") {
        p.send({ id: req.id, ok: true, model: req.model });
      } else {
        p.send({
          id: req.id,
          ok: true,
          uptime_us: 10,
          models: [
            {
              model: "m",
              family: "embedding",
              memory_bytes: 90,
              batches: 2,
              items: 3,
              tokens: 4,
              busy_us: 5,
            },
          ],
        });
      }
    };
    await expect(client.load("m", "/models/m")).resolves.toEqual({
      model: "m",
      family: "embedding",
      dim: 384,
      maxInputTokens: 256,
      memoryBytes: 90,
      loadUs: 7,
    });
    await expect(client.unload("m")).resolves.toEqual({ model: "m" });
    await expect(client.stats()).resolves.toEqual({
      uptimeUs: 10,
      models: [
        {
          model: "m",
          family: "embedding",
          memoryBytes: 90,
          batches: 2,
          items: 3,
          tokens: 4,
          busyUs: 5,
        },
      ],
    });
    expect(peer.requests.map((r) => [r.op, r.model, r.path])).toEqual([
      ["load", "m", "/models/m"],
      ["unload", "m", undefined],
      ["stats", undefined, undefined],
    ]);
  });

  it("sends load's backend, sim, gguf_weights and dtype options in the protocol's snake_case", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: true,
        model: req.model,
        family: "embedding",
        dim: 32,
        max_input_tokens: 64,
        memory_bytes: 5_000_000_000,
        load_us: 1,
      });
    };
    await expect(
      client.load("fake", undefined, {
        backend: "sim",
        sim: {
          profile: "minilm-l6-cpu",
          dim: 32,
          maxInputTokens: 64,
          memoryBytes: 5_000_000_000,
          fixedUs: 1.5,
          perSequenceUs: 0,
          perPaddedTokenNs: 250,
        },
      }),
    ).resolves.toMatchObject({ model: "fake", dim: 32, memoryBytes: 5_000_000_000 });
    await client.load("partial", "/models/m", { backend: "sim", sim: { fixedUs: 10 } });
    await client.load("plain", "/models/m");
    await client.load("f32", "/models/m.gguf", { ggufWeights: "f32" });
    await client.load("half", "/models/m", { dtype: "f16" });
    const [full, partial, plain, f32, half] = peer.requests;
    expect(full).toEqual({
      id: 1,
      op: "load",
      model: "fake",
      backend: "sim",
      sim: {
        profile: "minilm-l6-cpu",
        dim: 32,
        max_input_tokens: 64,
        memory_bytes: 5_000_000_000,
        fixed_us: 1.5,
        per_sequence_us: 0,
        per_padded_token_ns: 250,
      },
    });
    // Unset options are left out rather than sent as nil.
    expect(Object.keys(full ?? {})).not.toContain("path");
    expect(partial?.sim).toEqual({ fixed_us: 10 });
    expect(Object.keys((partial?.sim as object | undefined) ?? {})).toEqual(["fixed_us"]);
    expect(Object.keys(plain ?? {}).sort()).toEqual(["id", "model", "op", "path"]);
    expect(f32).toEqual({
      id: 4,
      op: "load",
      model: "f32",
      path: "/models/m.gguf",
      gguf_weights: "f32",
    });
    expect(half).toEqual({ id: 5, op: "load", model: "half", path: "/models/m", dtype: "f16" });
  });

  it("sends an openai model's remote in snake_case, with no path and no unset keys", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: true,
        model: req.model,
        family: "generate",
        dim: 0,
        max_input_tokens: 2048,
        memory_bytes: 0,
        load_us: 1,
      });
    };
    const remote = {
      url: "http://10.0.0.5:8000",
      remoteModel: "smol",
      family: "generate",
    } as const;
    await client.load("keyed", undefined, {
      backend: "openai",
      openai: { ...remote, apiKey: "sk-1", remoteTimeoutMs: 5000 },
    });
    await client.load("bare", undefined, { backend: "openai", openai: remote });
    const [keyed, bare] = peer.requests;
    expect(keyed).toEqual({
      id: 1,
      op: "load",
      model: "keyed",
      backend: "openai",
      openai: {
        url: "http://10.0.0.5:8000",
        remote_model: "smol",
        family: "generate",
        api_key: "sk-1",
        timeout_ms: 5000,
      },
    });
    expect(Object.keys((bare?.openai as object | undefined) ?? {}).sort()).toEqual([
      "family",
      "remote_model",
      "url",
    ]);
  });

  it("accepts the sim backend in health", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, version: "0.1.0", backend: "sim", device: "cpu" });
    };
    await expect(client.health()).resolves.toEqual({
      version: "0.1.0",
      backend: "sim",
      device: "cpu",
    });
  });

  it("matches responses to requests by id whatever their order", async () => {
    const calls = [1, 2, 3, 4, 5].map((n) =>
      client.embed({ model: "m", inputs: Array.from({ length: n }, () => "x") }),
    );
    await peer.waitForRequests(5);
    for (const req of [...peer.requests].reverse()) {
      const rows = (req.inputs as unknown[]).length;
      peer.send(embedReply(req.id, rows, 4, rows));
    }
    const results = await Promise.all(calls);
    results.forEach((result, i) => {
      expect(result.count).toBe(i + 1);
      expect(new Float32Array(result.embeddings.slice().buffer)[0]).toBe(i + 1);
    });
    expect(new Set(peer.requests.map((r) => r.id)).size).toBe(5);
    expect(client.inFlight).toBe(0);
  });

  it("hands embeddings over as a plain Uint8Array of exactly the bytes received", async () => {
    peer.onRequest = (req, p) => {
      p.send(embedReply(req.id, 2, 3, 0.5));
    };
    const result = await client.embed({ model: "m", inputs: ["a", "b"] });
    expect(result.embeddings.constructor).toBe(Uint8Array);
    expect(result.embeddings).toEqual(new Uint8Array(new Float32Array(6).fill(0.5).buffer));
  });
});

describe("SidecarClient errors", () => {
  it("turns an error response into SidecarError with its code", async () => {
    peer.onRequest = (req, p) => {
      p.send({
        id: req.id,
        ok: false,
        error: { code: "model_not_found", message: "no model nope" },
      });
    };
    const error = await client.embed({ model: "nope", inputs: ["x"] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarError);
    expect(error).toMatchObject({
      code: "model_not_found",
      message: "model_not_found: no model nope",
    });
  });

  it.each([
    {
      name: "an unknown error code",
      reply: (id: unknown) => ({ id, ok: false, error: { code: "oops", message: "m" } }),
      message: 'unknown error code "oops"',
    },
    {
      name: "an error without a message",
      reply: (id: unknown) => ({ id, ok: false, error: { code: "internal" } }),
      message: 'field "message" must be a string (missing)',
    },
    {
      name: "a missing ok",
      reply: (id: unknown) => ({ id }),
      message: 'field "ok" must be a boolean',
    },
    {
      name: "a missing field",
      reply: (id: unknown) => ({ id, ok: true, version: "1", backend: "candle-cpu" }),
      message: 'health response: field "device" must be a string (missing)',
    },
    {
      name: "an unknown backend",
      reply: (id: unknown) => ({ ...healthReply(id), backend: "tpu" }),
      message: "must be one of candle-cpu, candle-cuda",
    },
  ])(
    "rejects $name with SidecarProtocolError and keeps the connection",
    async ({ reply, message }) => {
      peer.onRequest = (req, p) => {
        p.send(peer.requests.length === 1 ? reply(req.id) : healthReply(req.id));
      };
      const error = await client.health().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SidecarProtocolError);
      expect((error as Error).message).toContain(message);
      await expect(client.health()).resolves.toMatchObject({ device: "cpu" });
    },
  );

  it.each([
    {
      name: "a row count other than the inputs sent",
      patch: { count: 3 },
      message: "count 3 differs from 2 inputs sent",
    },
    {
      name: "embeddings of the wrong size",
      patch: { embeddings: new Uint8Array(12) },
      message: "expected count × dim × 4 = 16",
    },
    {
      name: "too few token counts",
      patch: { tokens: [1] },
      message: "tokens (1) and truncated (2)",
    },
    {
      name: "embeddings as an array",
      patch: { embeddings: [0, 0] },
      message: 'field "embeddings" must be bin (got array)',
    },
    {
      name: "a negative queue time",
      patch: { queue_us: -1 },
      message: 'field "queue_us" must be an unsigned integer (got -1)',
    },
  ])("rejects an embed response with $name", async ({ patch, message }) => {
    peer.onRequest = (req, p) => {
      p.send({ ...embedReply(req.id, 2, 2, 0), ...patch });
    };
    const error = await client.embed({ model: "m", inputs: ["a", "b"] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarProtocolError);
    expect((error as Error).message).toContain(message);
  });

  it("times out one request without disturbing others, and ignores its late answer", async () => {
    peer.onRequest = (req, p) => {
      if (req.op === "health") p.send(healthReply(req.id));
    };
    const started = Date.now();
    const error = await client.stats({ timeoutMs: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarTimeoutError);
    expect(error).toMatchObject({ op: "stats", timeoutMs: 100 });
    expect(Date.now() - started).toBeLessThan(1500);
    peer.send({ id: peer.requests[0]?.id, ok: true, uptime_us: 1, models: [] });
    await expect(client.health()).resolves.toMatchObject({ version: "0.1.0" });
    expect(client.isClosed).toBe(false);
  });

  it("rejects an invalid per-call timeout", async () => {
    await expect(client.health({ timeoutMs: 0 })).rejects.toThrow(RangeError);
    expect(peer.requests).toHaveLength(0);
  });

  it("refuses a request larger than maxFrameBytes without sending it", async () => {
    const small = await SidecarClient.connect({ socketPath: peer.socketPath, maxFrameBytes: 1024 });
    try {
      await expect(small.embed({ model: "m", inputs: ["x".repeat(2000)] })).rejects.toThrow(
        FrameTooLargeError,
      );
      expect(small.isClosed).toBe(false);
      expect(small.inFlight).toBe(0);
    } finally {
      await small.close();
    }
    expect(peer.requests).toHaveLength(0);
  });
});

describe("SidecarClient connection loss", () => {
  it("rejects every pending request when the sidecar closes the connection", async () => {
    const calls = [
      client.health(),
      client.stats(),
      client.embed({ model: "m", inputs: ["x"] }),
    ].map((p) => p.catch((e: unknown) => e));
    await peer.waitForRequests(3);
    const started = Date.now();
    peer.connection?.destroy();
    const errors = await Promise.all(calls);
    expect(Date.now() - started).toBeLessThan(1000);
    for (const error of errors) expect(error).toBeInstanceOf(SidecarUnavailableError);
    const reason = await client.closed();
    expect(reason).toBeInstanceOf(SidecarUnavailableError);
    expect(client.isClosed).toBe(true);
    await expect(client.health()).rejects.toBe(reason);
  });

  it("gives up the connection on a response that belongs to no request", async () => {
    const call = client.health().catch((e: unknown) => e);
    await peer.waitForRequests(1);
    peer.sendRaw(new Uint8Array([0, 0, 0, 1, 0x93 /* a fixarray header without elements */]));
    const error = await call;
    expect(error).toBeInstanceOf(SidecarUnavailableError);
    expect((error as Error).cause).toBeInstanceOf(SidecarProtocolError);
    await expect(client.closed()).resolves.toBe(error);
  });

  it("gives up the connection on an error for id 0", async () => {
    const call = client.health().catch((e: unknown) => e);
    await peer.waitForRequests(1);
    peer.send({
      id: 0,
      ok: false,
      error: { code: "frame_too_large", message: "frame of 99 bytes" },
    });
    const error = await call;
    expect(error).toBeInstanceOf(SidecarUnavailableError);
    expect((error as Error).cause).toMatchObject({ name: "SidecarError", code: "frame_too_large" });
  });

  it("gives up the connection on a length prefix above maxFrameBytes", async () => {
    const call = client.health().catch((e: unknown) => e);
    await peer.waitForRequests(1);
    peer.sendRaw(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
    const error = await call;
    expect(error).toBeInstanceOf(SidecarUnavailableError);
    expect((error as Error).cause).toBeInstanceOf(FrameTooLargeError);
  });

  it("close() fails pending requests and settles closed() with undefined", async () => {
    const call = client.health().catch((e: unknown) => e);
    await peer.waitForRequests(1);
    await client.close();
    expect(await call).toBeInstanceOf(SidecarUnavailableError);
    await expect(client.closed()).resolves.toBeUndefined();
    await expect(client.stats()).rejects.toThrow("the sidecar client was closed");
    await client.close();
  });

  it("rejects invalid options", async () => {
    await expect(SidecarClient.connect({ socketPath: "" })).rejects.toThrow(TypeError);
  });

  it("fails to connect to a socket nobody listens on", async () => {
    const error = await SidecarClient.connect({ socketPath: join(dir, "absent.sock") }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SidecarUnavailableError);
    expect((error as Error).message).toContain("absent.sock");
  });
});
