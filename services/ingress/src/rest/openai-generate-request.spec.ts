import { InvalidArgumentError } from "@shoal/gateway";
import { describe, expect, it } from "vitest";
import { parseChatRequest, parseCompletionRequest } from "./openai-generate-request.js";

const base = { model: "m", messages: [{ role: "user", content: "hi" }] };

describe("parseChatRequest", () => {
  it("maps OpenAI's fields onto the gateway's call", () => {
    const parsed = parseChatRequest({
      ...base,
      n: 2,
      max_tokens: 10,
      temperature: 0.5,
      top_p: 0.9,
      seed: 3,
      stop: "\n",
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(parsed).toEqual({
      call: {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        n: 2,
        maxTokens: 10,
        temperature: 0.5,
        topP: 0.9,
        seed: 3,
        stop: ["\n"],
      },
      stream: true,
      includeUsage: true,
    });
  });

  it("prefers max_completion_tokens, joins text parts and treats null as absent", () => {
    const parsed = parseChatRequest({
      model: "m",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
      ],
      max_completion_tokens: 5,
      max_tokens: 50,
      temperature: null,
      stop: null,
    });
    expect(parsed.call.maxTokens).toBe(5);
    expect(parsed.call.messages).toEqual([{ role: "user", content: "ab" }]);
    expect(parsed.call.temperature).toBeUndefined();
    expect(parsed.stream).toBe(false);
  });

  it.each<[string, unknown]>([
    ["a non-object body", [1]],
    ["no model", { messages: base.messages }],
    ["messages that are not an array", { model: "m", messages: "hi" }],
    ["a message without a role", { model: "m", messages: [{ content: "x" }] }],
    [
      "an image part",
      { model: "m", messages: [{ role: "user", content: [{ type: "image_url" }] }] },
    ],
    ["content of the wrong type", { model: "m", messages: [{ role: "user", content: 3 }] }],
    ["a string n", { ...base, n: "2" }],
    ["a string temperature", { ...base, temperature: "hot" }],
    ["stop of the wrong type", { ...base, stop: [1] }],
    ["stream_options without stream", { ...base, stream_options: { include_usage: true } }],
    [
      "a non-boolean include_usage",
      { ...base, stream: true, stream_options: { include_usage: 1 } },
    ],
    ["tools", { ...base, tools: [{ type: "function" }] }],
    ["logprobs", { ...base, logprobs: true }],
  ])("refuses %s", (_what, body) => {
    expect(() => parseChatRequest(body)).toThrow(InvalidArgumentError);
  });
});

describe("parseCompletionRequest", () => {
  it("takes a string prompt or an array of one string", () => {
    expect(parseCompletionRequest({ model: "m", prompt: "x" }).call.prompt).toBe("x");
    expect(parseCompletionRequest({ model: "m", prompt: ["y"] }).call.prompt).toBe("y");
  });

  it.each<[string, unknown]>([
    ["no prompt", { model: "m" }],
    ["several prompts", { model: "m", prompt: ["a", "b"] }],
    ["token-id prompts", { model: "m", prompt: [1, 2] }],
    ["echo", { model: "m", prompt: "x", echo: true }],
    ["suffix", { model: "m", prompt: "x", suffix: "y" }],
    ["best_of", { model: "m", prompt: "x", best_of: 3 }],
  ])("refuses %s", (_what, body) => {
    expect(() => parseCompletionRequest(body)).toThrow(InvalidArgumentError);
  });
});
