import { compileCatalog, type ModelEntry } from "@shoal/config";
import type { SidecarClient } from "@shoal/sidecar-client";
import { describe, expect, it } from "vitest";
import { loadOptionsFor, loadPath } from "./load-options.js";

// An openai model's options come from the catalog and the environment alone; a client that
// throws proves the sidecar is not asked.
const client = {
  health: () => Promise.reject(new Error("health is not needed for an openai model")),
} as unknown as SidecarClient;

function entry(source: Record<string, unknown>, family = "generator"): ModelEntry {
  const raw = { id: "m", key: "m", family, dimensions: 0, maxInputTokens: 512, source };
  return compileCatalog({ models: [raw] }, { modelsDir: "/models" }).models[0] as ModelEntry;
}

const remote = { kind: "openai", url: "http://10.0.0.9:8000", remoteModel: "smol" };

describe("loadOptionsFor a model on a remote engine", () => {
  it("loads it on the openai backend with no path", async () => {
    const model = entry({ ...remote, timeoutMs: 9000 });
    expect(loadPath(model)).toBeUndefined();
    expect(await loadOptionsFor(client, model, 1000, {})).toEqual({
      timeoutMs: 1000,
      backend: "openai",
      openai: {
        url: "http://10.0.0.9:8000",
        remoteModel: "smol",
        family: "generate",
        remoteTimeoutMs: 9000,
      },
    });
    const embedder = entry(remote, "embedding");
    expect((await loadOptionsFor(client, embedder, undefined, {})).openai?.family).toBe(
      "embedding",
    );
  });

  it("sends the key from the variable apiKeyEnv names, and fails naming it when unset", async () => {
    const model = entry({ ...remote, apiKeyEnv: "ENGINE_KEY" });
    const options = await loadOptionsFor(client, model, undefined, { ENGINE_KEY: "sk-9" });
    expect(options.openai?.apiKey).toBe("sk-9");
    await expect(loadOptionsFor(client, model, undefined, {})).rejects.toThrow(
      "m: its remote engine's API key is read from ENGINE_KEY, which is not set",
    );
    await expect(loadOptionsFor(client, model, undefined, { ENGINE_KEY: "" })).rejects.toThrow(
      /ENGINE_KEY/,
    );
  });

  it("gives a model with files its directory", () => {
    expect(loadPath(entry({ kind: "dir", path: "/srv/m" }))).toBe("/srv/m");
  });
});
