import { compileCatalog } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { ModelAccess } from "./access.js";
import { InvalidArgumentError, ModelNotFoundError } from "./errors.js";
import { validateEmbed, validateTokenInputs } from "./validate.js";

const catalog = ModelAccess.open(
  compileCatalog(
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
  ),
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

describe("validateTokenInputs", () => {
  it("accepts lists of ids", () => {
    expect(validateTokenInputs(catalog, "emb", [[1, 2], [0]], limits).id).toBe("emb");
  });
  it.each([
    ["no inputs", [], /must not be empty/],
    ["an empty list", [[1], []], /input 1 has no token ids/],
    ["a negative id", [[1, -1]], /input 0: token id at 1/],
    ["a fraction", [[1.5]], /non-negative integer/],
    ["too many ids", [Array.from({ length: 11 }, () => 1)], /more than 10 ids/],
    ["too many inputs", [[1], [1], [1], [1]], /at most 3 inputs/],
  ])("rejects %s", (_name, inputs, message) => {
    expect(() => validateTokenInputs(catalog, "emb", inputs, limits)).toThrow(message);
  });
});

describe("validateEmbed with offloading", () => {
  it("lets an offloaded input pass the character limit, and only that one", () => {
    const huge = "x".repeat(11);
    expect(validateEmbed(catalog, "emb", [huge], limits, (i) => i === 0).id).toBe("emb");
    expect(() => validateEmbed(catalog, "emb", ["a", huge], limits, (i) => i === 0)).toThrow(
      /input 1 is longer/,
    );
  });
});
