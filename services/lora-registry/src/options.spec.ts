import { compileCatalog, ConfigError } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import { describe, expect, it } from "vitest";
import { compileRegistryOptions, DEFAULT_REGISTRY_OPTIONS } from "./options.js";

const logger = createLogger({ service: "lora-registry", level: "silent" });
const entry = (family: string) => ({
  id: `m-${family}`,
  key: `m-${family}`,
  family,
  dimensions: 0,
  maxInputTokens: 8,
  source: { kind: "dir", path: "/x" },
});
const catalog = compileCatalog({ models: [entry("generator")] }, { modelsDir: "/unused" });

describe("compileRegistryOptions", () => {
  it("fills every default", () => {
    expect(compileRegistryOptions({ natsServers: "nats://x", catalog, logger })).toEqual({
      ...DEFAULT_REGISTRY_OPTIONS,
      access: "open",
    });
    expect(DEFAULT_REGISTRY_OPTIONS).toMatchObject({
      port: 8091,
      maxUploadBytes: 268_435_456,
      maxRank: 64,
    });
  });

  it.each([
    [{ port: 70_000 }, "port must be an integer in [0, 65535]"],
    [{ maxUploadBytes: 10 }, "maxUploadBytes"],
    [{ idleTimeoutMs: 0 }, "idleTimeoutMs"],
    [{ maxRank: 0 }, "maxRank"],
    [{ maxRank: 8.5 }, "maxRank"],
    [{ maxConcurrentUploads: 0 }, "maxConcurrentUploads"],
    [{ host: "" }, "host must not be empty"],
  ])("refuses %j", (override, message) => {
    expect(() =>
      compileRegistryOptions({ natsServers: "nats://x", catalog, logger, ...override }),
    ).toThrow(message);
  });

  it("refuses a catalog without a generator to adapt", () => {
    const embeddings = compileCatalog({ models: [entry("embedding")] }, { modelsDir: "/unused" });
    expect(() => compileRegistryOptions({ natsServers: "n", catalog: embeddings, logger })).toThrow(
      ConfigError,
    );
  });
});
