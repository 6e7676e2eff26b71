import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScriptedSidecar } from "../test/support/scripted-sidecar.js";
import { SidecarClient } from "./client.js";
import type { GeneratedTokens } from "./generation.js";
import { SidecarError } from "./sidecar-error.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";
import { SidecarTimeoutError } from "./sidecar-timeout-error.js";
import { SidecarUnavailableError } from "./sidecar-unavailable-error.js";

let dir: string;
let peer: ScriptedSidecar;
let client: SidecarClient;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "shoal-generation-spec-"));
  peer = await ScriptedSidecar.start(dir);
  client = await SidecarClient.connect({ socketPath: peer.socketPath, requestTimeoutMs: 2000 });
});

afterEach(async () => {
  await client.close();
  await peer.stop();
  await rm(dir, { recursive: true, force: true });
});

const done = (id: unknown, extra: object = {}): object => ({
  id,
  ok: true,
  event: "done",
  finish_reason: "length",
  prompt_tokens: 5,
  completion_tokens: 2,
  queue_us: 3,
  compute_us: 40,
  ...extra,
});

async function collect(iterable: AsyncIterable<GeneratedTokens>): Promise<string[]> {
  const texts: string[] = [];
  for await (const t of iterable) texts.push(t.text);
  return texts;
}

describe("SidecarClient.generate", () => {
  it("sends sampling fields in snake_case and leaves unset ones out", async () => {
    peer.onRequest = (req, p) => {
      p.send(done(req.id));
    };
    await client.generate({ model: "g", prompt: "hi" }).done;
    expect(peer.requests[0]).toEqual({ id: 1, op: "generate", model: "g", prompt: "hi" });
    await client.generate({
      model: "g",
      messages: [{ role: "user", content: "hello" }],
      maxTokens: 7,
      temperature: 0,
      topP: 0.9,
      topK: 40,
      minP: 0.05,
      repetitionPenalty: 1.1,
      seed: 42,
      stop: ["\n"],
      traceparent: "t",
    }).done;
    expect(peer.requests[1]).toEqual({
      id: 2,
      op: "generate",
      model: "g",
      messages: [{ role: "user", content: "hello" }],
      max_tokens: 7,
      temperature: 0,
      top_p: 0.9,
      top_k: 40,
      min_p: 0.05,
      repetition_penalty: 1.1,
      seed: 42,
      stop: ["\n"],
      traceparent: "t",
    });
  });

  it("refuses both or neither of prompt and messages before sending", () => {
    expect(() => client.generate({ model: "g" })).toThrow(RangeError);
    expect(() =>
      client.generate({ model: "g", prompt: "a", messages: [{ role: "user", content: "b" }] }),
    ).toThrow(RangeError);
    expect(peer.requests).toHaveLength(0);
  });

  it("yields token events in order, then resolves done with the totals", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, event: "tokens", text: "Hel", token_ids: [1, 2] });
      p.send({ id: req.id, ok: true, event: "tokens", text: "lo é", token_ids: [3] });
      p.send(done(req.id, { finish_reason: "stop" }));
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await expect(collect(generation)).resolves.toEqual(["Hel", "lo é"]);
    await expect(generation.done).resolves.toEqual({
      finishReason: "stop",
      promptTokens: 5,
      completionTokens: 2,
      queueUs: 3,
      computeUs: 40,
    });
    expect(generation.finished).toBe(true);
    expect(client.inFlight).toBe(0);
  });

  it("hands out events that arrived before iteration started", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, event: "tokens", text: "a", token_ids: [1] });
      p.send(done(req.id));
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await generation.done;
    await expect(collect(generation)).resolves.toEqual(["a"]);
  });

  it("interleaves two streams on one connection by id", async () => {
    peer.onRequest = () => undefined;
    const a = client.generate({ model: "g", prompt: "a" });
    const b = client.generate({ model: "g", prompt: "b" });
    await peer.waitForRequests(2);
    peer.send({ id: b.id, ok: true, event: "tokens", text: "B1", token_ids: [1] });
    peer.send({ id: a.id, ok: true, event: "tokens", text: "A1", token_ids: [2] });
    peer.send({ id: b.id, ok: true, event: "tokens", text: "B2", token_ids: [3] });
    peer.send(done(a.id));
    peer.send(done(b.id));
    await expect(Promise.all([collect(a), collect(b)])).resolves.toEqual([["A1"], ["B1", "B2"]]);
  });

  it("ends iteration and done with the sidecar's error", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, event: "tokens", text: "a", token_ids: [1] });
      p.send({ id: req.id, ok: false, error: { code: "internal", message: "boom" } });
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await expect(collect(generation)).rejects.toBeInstanceOf(SidecarError);
    await expect(generation.done).rejects.toMatchObject({ code: "internal" });
  });

  it("an error before the first token fails done without any event", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: false, error: { code: "input_too_long", message: "prompt" } });
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await expect(generation.done).rejects.toMatchObject({ code: "input_too_long" });
    await expect(collect(generation)).rejects.toBeInstanceOf(SidecarError);
  });

  it("fails the stream on a malformed event or done", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, event: "tokens", text: 5, token_ids: [1] });
    };
    await expect(client.generate({ model: "g", prompt: "x" }).done).rejects.toBeInstanceOf(
      SidecarProtocolError,
    );
    peer.onRequest = (req, p) => {
      p.send(done(req.id, { finish_reason: "tired" }));
    };
    await expect(client.generate({ model: "g", prompt: "x" }).done).rejects.toBeInstanceOf(
      SidecarProtocolError,
    );
  });

  it("the timeout bounds silence between frames, not the whole stream", async () => {
    const short = await SidecarClient.connect({
      socketPath: peer.socketPath,
      requestTimeoutMs: 1500,
    });
    try {
      peer.onRequest = (req, p) => {
        // Frames 500 ms apart: 2.5 s in all, never 1.5 s of silence.
        for (let i = 0; i < 4; i++) {
          setTimeout(
            () => {
              p.send({ id: req.id, ok: true, event: "tokens", text: String(i), token_ids: [i] });
            },
            500 * (i + 1),
          );
        }
        setTimeout(() => {
          p.send(done(req.id));
        }, 2500);
      };
      const ok = short.generate({ model: "g", prompt: "x" });
      await expect(collect(ok)).resolves.toEqual(["0", "1", "2", "3"]);
      peer.onRequest = () => undefined;
      const silent = short.generate({ model: "g", prompt: "x" });
      await expect(silent.done).rejects.toBeInstanceOf(SidecarTimeoutError);
    } finally {
      await short.close();
    }
  });

  it("cancel sends the target id and reports whether it was still running", async () => {
    peer.onRequest = (req, p) => {
      if (req.op === "cancel") {
        p.send({ id: req.id, ok: true, cancelled: true });
        p.send(done(req.target, { finish_reason: "cancelled" }));
      }
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await expect(generation.cancel()).resolves.toBe(true);
    expect(peer.requests[1]).toEqual({ id: 2, op: "cancel", target: generation.id });
    await expect(generation.done).resolves.toMatchObject({ finishReason: "cancelled" });
    // A finished generation is not cancelled again over the wire.
    await expect(generation.cancel()).resolves.toBe(false);
    expect(peer.requests).toHaveLength(2);
  });

  it("a closed connection fails every stream in flight", async () => {
    peer.onRequest = (req, p) => {
      p.send({ id: req.id, ok: true, event: "tokens", text: "a", token_ids: [1] });
      p.connection?.destroy();
    };
    const generation = client.generate({ model: "g", prompt: "x" });
    await expect(collect(generation)).rejects.toBeInstanceOf(SidecarUnavailableError);
  });
});
