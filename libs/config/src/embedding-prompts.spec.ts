import { describe, expect, it } from "vitest";
import { compileEmbeddingPrompts } from "./embedding-prompts.js";

const E5 = { query: "query: ", passage: "passage: " };

describe("compileEmbeddingPrompts", () => {
  it("reads named prefixes and a default among them", () => {
    expect(compileEmbeddingPrompts(E5, undefined, "embedding", "m")).toEqual({ prompts: E5 });
    expect(compileEmbeddingPrompts(E5, "passage", "embedding", "m")).toEqual({
      prompts: E5,
      defaultPrompt: "passage",
    });
    expect(compileEmbeddingPrompts(undefined, undefined, "embedding", "m")).toBeUndefined();
  });

  it.each<[string, unknown, unknown, string, RegExp]>([
    ["a generator's prompts", E5, undefined, "generator", /only for family embedding/],
    ["a list", ["query: "], undefined, "embedding", /object of prompt names/],
    ["no prompt at all", {}, undefined, "embedding", /at least one/],
    ["an upper-case name", { Query: "q: " }, undefined, "embedding", /"Query" is not a prompt/],
    ["an empty prefix", { query: "" }, undefined, "embedding", /prompts.query must be/],
    ["a prefix of 1025 chars", { q: "x".repeat(1025) }, undefined, "embedding", /at most 1024/],
    ["an unknown default", E5, "document", "embedding", /defaultPrompt must be one of query/],
    ["a default with no prompts", undefined, "query", "embedding", /has no prompts/],
  ])("refuses %s", (_name, prompts, defaultPrompt, family, message) => {
    expect(() => compileEmbeddingPrompts(prompts, defaultPrompt, family, "m")).toThrow(message);
  });
});
