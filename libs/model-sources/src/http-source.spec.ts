import type { ModelEntry, ModelSource } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { fileRequest } from "./http-source.js";
import { ModelSourceError } from "./model-source-error.js";

const hub = { hfEndpoint: "https://hub.example", hfToken: "hf_tok" };

function entry(source: ModelSource): ModelEntry {
  return {
    id: "org/model",
    key: "model",
    family: "embedding",
    dimensions: 4,
    maxInputTokens: 8,
    pinned: false,
    source,
    dir: "/models/model",
  };
}

describe("fileRequest", () => {
  it.each([
    ["https://cdn.example/m", "config.json", "https://cdn.example/m/config.json"],
    ["https://cdn.example/m/", "config.json", "https://cdn.example/m/config.json"],
    [
      "http://10.0.0.1:9000/a/b//",
      "1_Pooling/config.json",
      "http://10.0.0.1:9000/a/b/1_Pooling/config.json",
    ],
  ])("joins %s and %s", (baseUrl, file, url) => {
    expect(fileRequest(entry({ kind: "url", baseUrl }), file, hub)).toEqual({ url, headers: {} });
  });

  it("builds the hub's resolve URL with the token as a bearer header", () => {
    const request = fileRequest(
      entry({ kind: "hub", repo: "sentence-transformers/all-MiniLM-L6-v2", revision: "main" }),
      "1_Pooling/config.json",
      hub,
    );
    expect(request).toEqual({
      url: "https://hub.example/sentence-transformers/all-MiniLM-L6-v2/resolve/main/1_Pooling/config.json",
      headers: { authorization: "Bearer hf_tok" },
    });
  });

  it("escapes a revision as one segment and sends no header without a token", () => {
    const request = fileRequest(
      entry({ kind: "hub", repo: "gpt2", revision: "refs/pr/1" }),
      "config.json",
      { hfEndpoint: "https://hub.example", hfToken: undefined },
    );
    expect(request).toEqual({
      url: "https://hub.example/gpt2/resolve/refs%2Fpr%2F1/config.json",
      headers: {},
    });
  });

  it.each([
    ["a repo that climbs out", { kind: "hub", repo: "../admin", revision: "main" }],
    ["a repo with three parts", { kind: "hub", repo: "a/b/c", revision: "main" }],
    ["a repo with a query", { kind: "hub", repo: "a/b?x=1", revision: "main" }],
    ["a base URL that is not a URL", { kind: "url", baseUrl: "cdn.example/m" }],
    ["a file: base URL", { kind: "url", baseUrl: "file:///etc" }],
    ["a dir source", { kind: "dir", path: "/models/m" }],
  ] as const)("refuses %s", (_name, source) => {
    expect(() => fileRequest(entry(source), "config.json", hub)).toThrow(ModelSourceError);
    try {
      fileRequest(entry(source), "config.json", hub);
    } catch (error) {
      expect((error as ModelSourceError).reason).toBe("invalid-source");
    }
  });
});
