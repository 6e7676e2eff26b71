import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import OpenAI, { APIError, BadRequestError, NotFoundError } from "openai";
import type { ModelStats } from "@shoal/sidecar-client";
import { repoRoot } from "@shoal/testing";
import { collectStream, inferenceStub } from "./support/grpc-js.js";
import { runPytest } from "./support/pytest.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SMOLLM2,
  startGenerationCluster,
  type GenerationCluster,
} from "./support/generation-cluster.js";

// The official `openai` npm package, unmodified, against a real cluster serving SmolLM2-135M
// (Q4_1 GGUF) on the real sidecar: chat and completions, streamed and not, and bad input.

let cluster: GenerationCluster;
let client: OpenAI;

beforeAll(async () => {
  cluster = await startGenerationCluster();
  client = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
}, 360_000);

afterAll(async () => {
  await cluster.stop();
});

const MESSAGES = [{ role: "user" as const, content: "Name three colours of the rainbow." }];

async function rejection(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("chat completions with the openai npm SDK", { timeout: 240_000 }, () => {
  let greedy = "";

  it("answers a chat, non-streamed, with usage", async () => {
    const res = await client.chat.completions.create({
      model: SMOLLM2,
      messages: MESSAGES,
      max_tokens: 24,
      temperature: 0,
    });
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe(SMOLLM2);
    expect(res.choices).toHaveLength(1);
    const choice = res.choices[0];
    expect(choice?.message.role).toBe("assistant");
    greedy = choice?.message.content ?? "";
    expect(greedy.trim()).not.toBe("");
    expect(["stop", "length"]).toContain(choice?.finish_reason);
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    expect(res.usage?.completion_tokens).toBeLessThanOrEqual(24);
    expect(res.usage?.prompt_tokens).toBeGreaterThan(5);
    expect(res.usage?.total_tokens).toBe(
      (res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0),
    );
  });

  it("streams the same greedy text token by token, with usage last", async () => {
    const stream = await client.chat.completions.create({
      model: SMOLLM2,
      messages: MESSAGES,
      max_tokens: 24,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let contentChunks = 0;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (choice === undefined) continue;
      if (choice.delta.content) {
        text += choice.delta.content;
        contentChunks++;
      }
      if (choice.finish_reason !== null) finish = choice.finish_reason;
    }
    expect(text).toBe(greedy);
    expect(contentChunks).toBeGreaterThan(1);
    expect(["stop", "length"]).toContain(finish);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("delivers the first token before the sequence finishes", async () => {
    const started = performance.now();
    const stream = await client.chat.completions.create({
      model: SMOLLM2,
      messages: [{ role: "user", content: "Write a long story about a lighthouse keeper." }],
      max_tokens: 64,
      temperature: 0,
      stream: true,
    });
    let firstTokenMs: number | undefined;
    let chunksBeforeLast = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) {
        firstTokenMs ??= performance.now() - started;
        chunksBeforeLast++;
      }
    }
    const totalMs = performance.now() - started;
    expect(firstTokenMs).toBeDefined();
    // A ratio, not an absolute time: the answer streamed rather than arriving in one piece.
    expect(chunksBeforeLast).toBeGreaterThan(8);
    expect((firstTokenMs ?? totalMs) / totalMs).toBeLessThan(0.5);
    console.info(
      `time to first token ${firstTokenMs?.toFixed(0)} ms of ${totalMs.toFixed(0)} ms total (${chunksBeforeLast} chunks)`,
    );
  });

  it("ends before a stop string, which is not sent", async () => {
    const words = greedy.split(/\s+/).filter((w) => w.length >= 3);
    const stop = words[Math.min(2, words.length - 1)];
    expect(stop, `greedy text too short to pick a stop word: ${greedy}`).toBeDefined();
    const res = await client.chat.completions.create({
      model: SMOLLM2,
      messages: MESSAGES,
      max_tokens: 24,
      temperature: 0,
      stop: stop ?? "",
    });
    const text = res.choices[0]?.message.content ?? "";
    expect(text).toBe(greedy.slice(0, greedy.indexOf(stop ?? "")));
    expect(res.choices[0]?.finish_reason).toBe("stop");
  });

  it("returns n choices, each sampled with its own seed", async () => {
    const res = await client.chat.completions.create({
      model: SMOLLM2,
      messages: MESSAGES,
      max_tokens: 12,
      temperature: 1,
      seed: 7,
      n: 2,
    });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1]);
    for (const c of res.choices) expect(c.message.content?.trim()).not.toBe("");
    // Same seed, same answers.
    const again = await client.chat.completions.create({
      model: SMOLLM2,
      messages: MESSAGES,
      max_tokens: 12,
      temperature: 1,
      seed: 7,
      n: 2,
    });
    expect(again.choices.map((c) => c.message.content)).toEqual(
      res.choices.map((c) => c.message.content),
    );
    // Choice i is sampled with seed + i: each is the answer of a single request with that seed.
    const single = async (seed: number) =>
      (
        await client.chat.completions.create({
          model: SMOLLM2,
          messages: MESSAGES,
          max_tokens: 12,
          temperature: 1,
          seed,
        })
      ).choices[0]?.message.content;
    expect([await single(7), await single(8)]).toEqual(res.choices.map((c) => c.message.content));
    expect(res.choices[0]?.message.content).not.toBe(res.choices[1]?.message.content);
  });
});

describe("the README's chat example", { timeout: 240_000 }, () => {
  // The request as the README's curl sends it, read from the README itself: no temperature, so
  // the model's catalog defaults decide whether the first thing a user tries makes sense.
  const readme = readFileSync(join(repoRoot(), "README.md"), "utf8");
  const curl = /curl -s localhost:8080\/v1\/chat\/completions[^\n]*\n\s*-d '([^']+)'/.exec(readme);
  const COLORS =
    /\b(red|orange|yellow|green|blue|indigo|violet|purple|pink|black|white|brown|gr[ae]y)\b/gi;

  it("gives a sensible answer in 10 tries of 10", async () => {
    expect(curl?.[1]).toBeDefined();
    const body = JSON.parse(curl?.[1] ?? "{}") as Record<string, unknown>;
    expect(body["temperature"]).toBeUndefined();
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const res = await fetch(`${cluster.baseUrl}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(200);
        const answer = (await res.json()) as { choices: { message: { content: string } }[] };
        return answer.choices[0]?.message.content ?? "";
      }),
    );
    for (const answer of answers) {
      // Three colours asked for; at least two distinct ones named is a sensible answer.
      const named = new Set((answer.match(COLORS) ?? []).map((c) => c.toLowerCase()));
      expect(named.size, answer).toBeGreaterThanOrEqual(2);
    }
  });
});

describe("completions with the openai npm SDK", { timeout: 240_000 }, () => {
  it("completes a prompt, streamed and not, with the same greedy text", async () => {
    const prompt = "The capital of France is";
    const res = await client.completions.create({
      model: SMOLLM2,
      prompt,
      max_tokens: 12,
      temperature: 0,
    });
    expect(res.object).toBe("text_completion");
    const whole = res.choices[0]?.text ?? "";
    expect(whole).not.toBe("");
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    const stream = await client.completions.create({
      model: SMOLLM2,
      prompt,
      max_tokens: 12,
      temperature: 0,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    expect(text).toBe(whole);
  });
});

describe("cancellation reaches the sidecar", { timeout: 240_000 }, () => {
  // A prompt the greedy model keeps continuing: the control below shows it runs to
  // `max_tokens` when nobody cancels, so a cancelled run stopping far short of that bound is
  // the cancel's doing, not the model stopping by itself.
  const COUNTING = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,";
  const CONTROL_TOKENS = 160;
  /** Far below both max_tokens and the control: the tokens a cancel takes to reach a step. */
  const CANCEL_BOUND = 64;

  it("runs the counting prompt to max_tokens when nobody cancels (the control)", async () => {
    const res = await client.completions.create({
      model: SMOLLM2,
      prompt: COUNTING,
      max_tokens: CONTROL_TOKENS,
      temperature: 0,
    });
    expect(res.choices[0]?.finish_reason).toBe("length");
    expect(res.usage?.completion_tokens).toBe(CONTROL_TOKENS);
  });

  it("stops decoding and frees the sequence when a REST client disconnects mid-stream", async () => {
    const before = await cluster.sidecarStats();
    const controller = new AbortController();
    const stream = await client.completions.create(
      { model: SMOLLM2, prompt: COUNTING, max_tokens: 2000, temperature: 0, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    await rejection(
      (async () => {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.text && ++chunks >= 3) controller.abort();
        }
      })(),
    );
    const settled = await settledStats(before, CANCEL_BOUND);
    expect(settled).toBeGreaterThanOrEqual(3);
    expect(settled).toBeLessThan(CANCEL_BOUND);
    expect(cluster.worker.output()).toMatch(/generation cancelled/);
  });

  it("stops decoding and frees the sequence when a gRPC client cancels its Generate stream", async () => {
    const before = await cluster.sidecarStats();
    const stub = inferenceStub(cluster.baseUrl);
    try {
      const call = stub.Generate(
        { model: SMOLLM2, prompt: COUNTING, sampling: { maxTokens: 2000, temperature: 0 } },
        new grpc.Metadata(),
        { deadline: Date.now() + 120_000 },
      );
      const status = await new Promise<grpc.StatusObject>((resolve) => {
        let messages = 0;
        call.on("data", () => {
          if (++messages === 3) call.cancel();
        });
        call.on("error", () => undefined);
        call.on("status", resolve);
      });
      expect(status.code).toBe(grpc.status.CANCELLED);
      const settled = await settledStats(before, CANCEL_BOUND);
      expect(settled).toBeGreaterThanOrEqual(3);
      expect(settled).toBeLessThan(CANCEL_BOUND);
    } finally {
      stub.close();
    }
  });
});

/**
 * Polls the sidecar until its generator holds no running sequence and its generated-token
 * count reads the same twice a second apart, or that count reaches `bound` (the cancel did not
 * stop it); returns the tokens generated since `before`.
 */
async function settledStats(
  before: Awaited<ReturnType<GenerationCluster["sidecarStats"]>>,
  bound: number,
): Promise<number> {
  const generators = (s: typeof before): ModelStats[] =>
    s.models.filter((m) => m.family === "generate");
  const tokens = (s: typeof before): number =>
    generators(s).reduce((n, m) => n + (m.generatedTokens ?? 0), 0);
  let last = -1;
  for (;;) {
    const now = await cluster.sidecarStats();
    const count = tokens(now) - tokens(before);
    const active = generators(now).reduce((n, m) => n + (m.activeSequences ?? 0), 0);
    if ((count === last && active === 0) || count >= bound) return count;
    last = count;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

describe("bad input", { timeout: 60_000 }, () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      "messages of the wrong type",
      { messages: "hi" },
      /`messages` is required and must be an array/,
    ],
    ["missing messages", {}, /`messages` is required/],
    ["n beyond the limit", { messages: MESSAGES, n: 9 }, /n must be an integer in 1\.\.8/],
    [
      "max_tokens beyond the limit",
      { messages: MESSAGES, max_tokens: 100_000 },
      /max_tokens must be/,
    ],
    [
      "a temperature of the wrong type",
      { messages: MESSAGES, temperature: "hot" },
      /`temperature` must be a number/,
    ],
    ["an unknown role", { messages: [{ role: "wizard", content: "x" }] }, /role must be one of/],
    ["min_p out of range", { messages: MESSAGES, min_p: 1.5 }, /min_p must be in \[0, 1\]/],
    [
      "no repetition penalty",
      { messages: MESSAGES, repetition_penalty: 0 },
      /repetition_penalty must be in \(0, 2\]/,
    ],
    ["top_k of the wrong type", { messages: MESSAGES, top_k: "all" }, /`top_k` must be a number/],
  ])("refuses %s with 400 in OpenAI's shape", async (_what, body, message) => {
    const err = await rejection(
      client.chat.completions.create({ model: SMOLLM2, ...body } as never),
    );
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).message).toMatch(message);
    expect((err as BadRequestError).type).toBe("invalid_request_error");
  });

  it("refuses an unknown model with 404 naming the models served", async () => {
    const err = await rejection(
      client.chat.completions.create({ model: "nope/nope", messages: MESSAGES }),
    );
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).message).toContain(SMOLLM2);
  });

  it("refuses a prompt that does not fit the context with 400 before any stream starts", async () => {
    const huge = "lorem ipsum dolor sit amet ".repeat(4000);
    const err = await rejection(
      client.chat.completions.create({
        model: SMOLLM2,
        messages: [{ role: "user", content: huge }],
        max_tokens: 16,
        stream: true,
      }),
    );
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(400);
  });
});

interface GrpcGenerateResponse {
  delta: string;
  finishReason: string;
  index: number;
  usage: { inputTokens: number; outputTokens: number } | null;
}

describe("Generate with @grpc/grpc-js", { timeout: 240_000 }, () => {
  it("streams text messages, then the finish and usage", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    try {
      const messages = await collectStream<GrpcGenerateResponse>(
        stub.Generate(
          {
            model: SMOLLM2,
            chat: { messages: MESSAGES },
            sampling: { maxTokens: 24, temperature: 0 },
          },
          new grpc.Metadata(),
          { deadline: Date.now() + 120_000 },
        ),
      );
      const last = messages.at(-1);
      expect(messages.length).toBeGreaterThan(2);
      expect(["FINISH_REASON_STOP", "FINISH_REASON_LENGTH"]).toContain(last?.finishReason);
      expect(last?.usage?.outputTokens).toBeGreaterThan(0);
      const text = messages.map((m) => m.delta).join("");
      const rest = await client.chat.completions.create({
        model: SMOLLM2,
        messages: MESSAGES,
        max_tokens: 24,
        temperature: 0,
      });
      expect(text).toBe(rest.choices[0]?.message.content);
    } finally {
      stub.close();
    }
  });

  it("answers DEADLINE_EXCEEDED for a deadline already past", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    try {
      const err = await collectStream<GrpcGenerateResponse>(
        stub.Generate(
          { model: SMOLLM2, prompt: "hi", sampling: { maxTokens: 4 } },
          new grpc.Metadata(),
          { deadline: Date.now() - 1 },
        ),
      ).catch((e: unknown) => e);
      expect((err as grpc.ServiceError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    } finally {
      stub.close();
    }
  });

  it("answers NOT_FOUND for an unknown model and INVALID_ARGUMENT for n beyond the limit", async () => {
    const stub = inferenceStub(cluster.baseUrl);
    try {
      const call = (req: object): Promise<unknown> =>
        collectStream(stub.Generate(req, new grpc.Metadata(), {})).catch((e: unknown) => e);
      const unknown = await call({ model: "nope", prompt: "hi" });
      expect((unknown as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
      const tooMany = await call({ model: SMOLLM2, prompt: "hi", n: 9 });
      expect((tooMany as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    } finally {
      stub.close();
    }
  });
});

describe("Python clients (tools/clients-py/generation)", () => {
  it("pass pytest: the openai SDK and grpcio against the generator", async () => {
    const { code, output } = await runPytest(["tools/clients-py/generation"], cluster.baseUrl);
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
    expect(output, output).toMatch(/\b5 passed\b/);
    expect(output, output).not.toMatch(/skipped|xfail|xpass|deselected/);
  }, 300_000);
});
