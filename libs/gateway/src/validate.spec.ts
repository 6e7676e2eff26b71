import { compileCatalog } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError, ModelNotFoundError } from "./errors.js";
import { validateEmbed } from "./validate.js";

const catalog = compileCatalog(
  {
    models: [
      {
        id: "emb",
        key: "emb",
        family: "embedding",
        dimensions: 4,
        maxInputTokens: 8,
        source: { kind: "dir", path: "/m" },
      },
      {
        id: "gen",
        key: "gen",
        family: "generator",
        dimensions: 0,
        maxInputTokens: 8,
        source: { kind: "dir", path: "/g" },
      },
    ],
  },
  { modelsDir: "/cache" },
);
const limits = { maxInputs: 3, maxInputChars: 10 };

describe("validateEmbed", () => {
  it("accepts whitespace-only inputs, which the model embeds", () => {
    expect(validateEmbed(catalog, "emb", ["  \t "], limits).id).toBe("emb");
  });
  it("names the available models for an unknown one", () => {
    expect(() => validateEmbed(catalog, "nope", ["x"], limits)).toThrow(ModelNotFoundError);
    expect(() => validateEmbed(catalog, "nope", ["x"], limits)).toThrow(/available: emb, gen/);
  });
  it.each([
    ["a generator", "gen", ["x"], /not an embedding model/],
    ["no inputs", "emb", [], /must not be empty/],
    ["an empty string", "emb", ["a", ""], /input 1 is an empty string/],
    ["too many inputs", "emb", ["a", "b", "c", "d"], /at most 3 inputs/],
    ["a huge input", "emb", ["x".repeat(11)], /longer than 10 characters/],
  ])("rejects %s", (_name, model, inputs, message) => {
    expect(() => validateEmbed(catalog, model, inputs, limits)).toThrow(InvalidArgumentError);
    expect(() => validateEmbed(catalog, model, inputs, limits)).toThrow(message);
  });
});
