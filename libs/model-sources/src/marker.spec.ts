import type { ModelSource } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { checkMarker } from "./marker.js";
import { modelLayout } from "./model-files.js";

const source: ModelSource = { kind: "hub", repo: "org/model", revision: "abc123" };
const sha = "0".repeat(64);
const files = [
  { name: "config.json", size: 10, sha256: sha },
  { name: "tokenizer.json", size: 20, sha256: sha },
  { name: "model.safetensors", size: 30, sha256: sha },
];
const layout = modelLayout("safetensors");
const valid = {
  version: 1,
  modelId: "org/model",
  source,
  files,
  completedAt: "2025-01-01T00:00:00Z",
};

describe("checkMarker", () => {
  it("accepts a gguf marker for its one file", () => {
    const gguf = { ...valid, files: [{ name: "model.gguf", size: 10, sha256: sha }] };
    expect(checkMarker(gguf, source, modelLayout("gguf"))).toEqual(gguf);
    expect(checkMarker(gguf, source, layout)).toBeUndefined();
  });

  it("accepts a marker for the same source with every required file", () => {
    expect(checkMarker(JSON.parse(JSON.stringify(valid)), source, layout)).toEqual(valid);
  });

  it.each([
    ["not an object", "complete"],
    ["another version", { ...valid, version: 2 }],
    ["another revision", { ...valid, source: { ...source, revision: "def456" } }],
    ["another source kind", { ...valid, source: { kind: "url", baseUrl: "https://x" } }],
    ["an extra source field", { ...valid, source: { ...source, extra: 1 } }],
    ["a missing required file", { ...valid, files: files.slice(0, 2) }],
    ["a duplicated file", { ...valid, files: [...files, files[0]] }],
    [
      "a file outside the model set",
      { ...valid, files: [...files, { ...files[0], name: "../x" }] },
    ],
    ["a pickle", { ...valid, files: [...files, { ...files[0], name: "pytorch_model.bin" }] }],
    ["an empty file", { ...valid, files: [{ ...files[0], size: 0 }, ...files.slice(1)] }],
    [
      "a malformed digest",
      { ...valid, files: [{ ...files[0], sha256: "xyz" }, ...files.slice(1)] },
    ],
    ["no completion time", { ...valid, completedAt: undefined }],
    ["weights now gguf", valid, modelLayout("gguf")],
  ])("rejects %s", (_name, raw, expected = layout) => {
    expect(checkMarker(raw, source, expected)).toBeUndefined();
  });
});
