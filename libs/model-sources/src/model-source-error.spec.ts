import { describe, expect, it } from "vitest";
import { isModelSourceError, ModelSourceError, redactUrl } from "./model-source-error.js";

describe("ModelSourceError", () => {
  it("names the model, file and URL, and keeps its cause", () => {
    const cause = new Error("socket hang up");
    const error = new ModelSourceError("transfer", "HTTP 503", {
      modelId: "org/model",
      file: "model.safetensors",
      url: "https://user:pw@mirror.example/m/model.safetensors",
      cause,
    });
    expect(error.message).toBe(
      "model org/model, model.safetensors, from https://mirror.example/m/model.safetensors: HTTP 503",
    );
    expect(error.name).toBe("ModelSourceError");
    expect(error.cause).toBe(cause);
    expect(error.url).toBe("https://mirror.example/m/model.safetensors");
    expect(isModelSourceError(error)).toBe(true);
    expect(isModelSourceError(error, "transfer")).toBe(true);
    expect(isModelSourceError(error, "checksum")).toBe(false);
    expect(isModelSourceError(cause)).toBe(false);
  });

  it("leaves out what it does not know", () => {
    const error = new ModelSourceError("io", "disk full", { modelId: "m" });
    expect(error.message).toBe("model m: disk full");
    expect(error.file).toBeUndefined();
    expect("cause" in error).toBe(false);
  });
});

describe("redactUrl", () => {
  it.each([
    ["https://a:b@h.example/x", "https://h.example/x"],
    ["https://token@h.example/x", "https://h.example/x"],
    ["https://h.example/x?y=1", "https://h.example/x?y=1"],
    ["pypi:pkg==1.0", "pypi:pkg==1.0"],
    ["not a url", "not a url"],
  ])("turns %s into %s", (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });
});
