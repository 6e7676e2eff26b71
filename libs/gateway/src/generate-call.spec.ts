import { compileCatalog } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { ModelAccess } from "./access.js";
import { InvalidArgumentError, ModelNotFoundError } from "./errors.js";
import { DEFAULT_GENERATE_LIMITS, validateGenerate, type GenerateCall } from "./generate-call.js";

const catalog = ModelAccess.open(
  compileCatalog(
    {
      models: [
        {
          id: "gen",
          key: "gen",
          family: "generator",
          dimensions: 0,
          maxInputTokens: 2048,
          source: { kind: "dir", path: "/m/gen" },
        },
        {
          id: "emb",
          key: "emb",
          family: "embedding",
          dimensions: 4,
          maxInputTokens: 16,
          source: { kind: "dir", path: "/m/emb" },
        },
      ],
    },
    { modelsDir: "/unused" },
  ),
);

const ok: GenerateCall = { model: "gen", messages: [{ role: "user", content: "hi" }] };

describe("validateGenerate", () => {
  it("accepts a chat call and a prompt call with every parameter in range", () => {
    expect(validateGenerate(catalog, ok, DEFAULT_GENERATE_LIMITS).model.id).toBe("gen");
    const full: GenerateCall = {
      model: "gen",
      prompt: "once upon",
      n: 8,
      maxTokens: 4096,
      temperature: 0,
      topP: 1,
      topK: 40,
      minP: 1,
      repetitionPenalty: 2,
      seed: 2 ** 40,
      stop: ["\n", "x".repeat(256)],
    };
    expect(validateGenerate(catalog, full, DEFAULT_GENERATE_LIMITS).model.id).toBe("gen");
  });

  it("reads an adapter of the base model from the model field", () => {
    expect(
      validateGenerate(catalog, { ...ok, model: "gen:support-bot@2" }, DEFAULT_GENERATE_LIMITS),
    ).toEqual({ model: catalog.model("gen"), adapter: { name: "support-bot", version: 2 } });
    expect(
      validateGenerate(catalog, { ...ok, model: "gen:support-bot" }, DEFAULT_GENERATE_LIMITS)
        .adapter,
    ).toEqual({ name: "support-bot" });
  });

  it.each([["gen:"], ["gen:Bad Name"], ["gen:bot@0"], ["gen:bot@x"], [":bot"]])(
    "refuses the malformed reference %s as invalid",
    (model) => {
      expect(() => validateGenerate(catalog, { ...ok, model }, DEFAULT_GENERATE_LIMITS)).toThrow(
        InvalidArgumentError,
      );
    },
  );

  it("refuses an adapter of an unknown base as an unknown model", () => {
    expect(() =>
      validateGenerate(catalog, { ...ok, model: "nope:bot" }, DEFAULT_GENERATE_LIMITS),
    ).toThrow(ModelNotFoundError);
  });

  it("refuses an unknown model with the list of models", () => {
    expect(() =>
      validateGenerate(catalog, { ...ok, model: "nope" }, DEFAULT_GENERATE_LIMITS),
    ).toThrow(ModelNotFoundError);
  });

  it.each<[string, GenerateCall]>([
    ["a model of another family", { ...ok, model: "emb" }],
    ["neither prompt nor messages", { model: "gen" }],
    ["both prompt and messages", { ...ok, prompt: "x" }],
    ["an empty prompt", { model: "gen", prompt: "" }],
    ["no messages", { model: "gen", messages: [] }],
    ["an unknown role", { model: "gen", messages: [{ role: "wizard", content: "x" }] }],
    ["n beyond the limit", { ...ok, n: 9 }],
    ["n of 0", { ...ok, n: 0 }],
    ["a fractional n", { ...ok, n: 1.5 }],
    ["max_tokens beyond the limit", { ...ok, maxTokens: 4097 }],
    ["max_tokens of 0", { ...ok, maxTokens: 0 }],
    ["temperature above 2", { ...ok, temperature: 2.5 }],
    ["a negative temperature", { ...ok, temperature: -0.1 }],
    ["NaN temperature", { ...ok, temperature: Number.NaN }],
    ["top_p of 0", { ...ok, topP: 0 }],
    ["top_p above 1", { ...ok, topP: 1.01 }],
    ["a negative min_p", { ...ok, minP: -0.01 }],
    ["min_p above 1", { ...ok, minP: 1.5 }],
    ["a repetition penalty of 0", { ...ok, repetitionPenalty: 0 }],
    ["a repetition penalty above 2", { ...ok, repetitionPenalty: 2.5 }],
    ["a negative seed", { ...ok, seed: -1 }],
    ["a seed beyond 2^53", { ...ok, seed: 2 ** 60 }],
    ["nine stop strings", { ...ok, stop: Array.from({ length: 9 }, (_, i) => String(i)) }],
    ["an empty stop string", { ...ok, stop: [""] }],
    ["a stop string over 256 bytes", { ...ok, stop: ["é".repeat(129)] }],
    ["a prompt over the size limit", { model: "gen", prompt: "x".repeat(200_001) }],
  ])("refuses %s", (_what, call) => {
    expect(() => validateGenerate(catalog, call, DEFAULT_GENERATE_LIMITS)).toThrow(
      InvalidArgumentError,
    );
  });
});
