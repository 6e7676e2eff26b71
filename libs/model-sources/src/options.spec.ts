import { describe, expect, it } from "vitest";
import {
  compileEnsureModelOptions,
  DEFAULT_ENSURE_MODEL_OPTIONS,
  isCompiledEnsureModelOptions,
} from "./options.js";

describe("compileEnsureModelOptions", () => {
  it("fills every default and never reads process.env", () => {
    process.env["HF_TOKEN"] = "hf_from_process_env";
    try {
      const compiled = compileEnsureModelOptions();
      expect(compiled).toMatchObject({
        fetch: globalThis.fetch,
        hfEndpoint: "https://huggingface.co",
        hfToken: undefined,
        wheelsDir: undefined,
        python: "python3",
        pipArgs: [],
        onProgress: undefined,
        maxFileBytes: 4 * 1024 ** 3,
        logger: undefined,
      });
      expect(DEFAULT_ENSURE_MODEL_OPTIONS.maxFileBytes).toBe(4_294_967_296);
    } finally {
      delete process.env["HF_TOKEN"];
    }
  });

  it("takes HF_ENDPOINT without its trailing slash, and HF_TOKEN, from env", () => {
    const compiled = compileEnsureModelOptions({
      env: { HF_ENDPOINT: "http://mirror.local:8080/hf/", HF_TOKEN: "hf_abc" },
    });
    expect(compiled.hfEndpoint).toBe("http://mirror.local:8080/hf");
    expect(compiled.hfToken).toBe("hf_abc");
  });

  it("treats empty settings as unset, as the shell scripts do", () => {
    const compiled = compileEnsureModelOptions({ env: { HF_ENDPOINT: "", HF_TOKEN: "" } });
    expect(compiled.hfEndpoint).toBe("https://huggingface.co");
    expect(compiled.hfToken).toBeUndefined();
  });

  it("is recognised as compiled, and is frozen", () => {
    const compiled = compileEnsureModelOptions({ pipArgs: ["--no-index"] });
    expect(isCompiledEnsureModelOptions(compiled)).toBe(true);
    expect(isCompiledEnsureModelOptions({ ...compiled })).toBe(false);
    expect(isCompiledEnsureModelOptions({})).toBe(false);
    expect(Object.isFrozen(compiled)).toBe(true);
    expect(Object.isFrozen(compiled.pipArgs)).toBe(true);
  });

  it.each([
    ["a non-URL endpoint", { env: { HF_ENDPOINT: "huggingface.co" } }, TypeError, "HF_ENDPOINT"],
    ["a file: endpoint", { env: { HF_ENDPOINT: "file:///etc" } }, TypeError, "HF_ENDPOINT"],
    ["an empty python", { python: "" }, TypeError, "python"],
    ["an empty wheelsDir", { wheelsDir: "" }, TypeError, "wheelsDir"],
    ["zero maxFileBytes", { maxFileBytes: 0 }, RangeError, "maxFileBytes"],
    ["fractional maxFileBytes", { maxFileBytes: 1.5 }, RangeError, "maxFileBytes"],
    ["infinite maxFileBytes", { maxFileBytes: Infinity }, RangeError, "maxFileBytes"],
  ] as const)("rejects %s", (_name, options, type, message) => {
    expect(() => compileEnsureModelOptions(options)).toThrow(type);
    expect(() => compileEnsureModelOptions(options)).toThrow(message);
  });

  it("rejects a token that would break the header, without echoing it", () => {
    const token = "hf_secret\r\nX-Injected: 1";
    let message = "";
    try {
      compileEnsureModelOptions({ env: { HF_TOKEN: token } });
    } catch (error) {
      expect(error).toBeInstanceOf(TypeError);
      message = (error as Error).message;
    }
    expect(message).toContain("HF_TOKEN");
    expect(message).not.toContain("hf_secret");
  });
});
