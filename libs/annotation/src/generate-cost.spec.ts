import { create } from "@bufbuild/protobuf";
import { GenerateTaskSchema } from "@shoal/proto";
import { describe, expect, it } from "vitest";
import { generateCost, withModelDefaultLength } from "./generate-cost.js";

/** One token per word: enough to see how the parts of the estimate add up. */
const words = { count: (t: string) => t.split(/\s+/).filter(Boolean).length };

describe("generateCost", () => {
  it("is prompt tokens plus max_tokens, per sequence", () => {
    const task = create(GenerateTaskSchema, {
      input: { case: "prompt", value: "one two three" },
      sampling: { maxTokens: 10 },
      n: 2,
    });
    expect(generateCost(task, words)).toEqual({ promptTokens: 3, totalTokens: 26 });
  });

  it("uses the sidecar's default max_tokens when none is set, and n 0 as 1", () => {
    const task = create(GenerateTaskSchema, { input: { case: "prompt", value: "a b" } });
    expect(generateCost(task, words)).toEqual({ promptTokens: 2, totalTokens: 258 });
  });

  it("counts the chat template's tokens around every message", () => {
    const task = create(GenerateTaskSchema, {
      input: {
        case: "chat",
        value: {
          messages: [
            { role: "system", content: "be brief" },
            { role: "user", content: "hi" },
          ],
        },
      },
      sampling: { maxTokens: 4 },
      n: 1,
    });
    expect(generateCost(task, words)).toEqual({ promptTokens: 3 + 10, totalTokens: 17 });
  });
});

describe("withModelDefaultLength", () => {
  const prompt = { case: "prompt", value: "a b" } as const;

  it("gives a request without max_tokens the model's default, keeping its other sampling", () => {
    const task = create(GenerateTaskSchema, { input: prompt, sampling: { temperature: 0.5 } });
    const queued = withModelDefaultLength(task, 32);
    expect(queued.sampling?.maxTokens).toBe(32);
    expect(queued.sampling?.temperature).toBe(0.5);
    expect(generateCost(queued, words).totalTokens).toBe(2 + 32);
    expect(task.sampling?.maxTokens).toBeUndefined();
  });

  it("keeps the request's own max_tokens, and the task as is when the model has no default", () => {
    const own = create(GenerateTaskSchema, { input: prompt, sampling: { maxTokens: 7 } });
    expect(withModelDefaultLength(own, 32).sampling?.maxTokens).toBe(7);
    const bare = create(GenerateTaskSchema, { input: prompt });
    expect(withModelDefaultLength(bare, undefined)).toBe(bare);
  });
});
