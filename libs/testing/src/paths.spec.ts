import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MissingPrerequisiteError } from "./missing-prerequisite-error.js";
import { minilmDir, natsServerBinary, repoRoot, shoalHome, sidecarBinary } from "./paths.js";
import { tempDir } from "./temp-dir.js";

const VARS = [
  "SHOAL_HOME",
  "SHOAL_NATS_SERVER",
  "SHOAL_SIDECAR_BIN",
  "CARGO_TARGET_DIR",
  "SHOAL_MINILM_DIR",
];

let home: string;

beforeEach(async () => {
  home = await tempDir("paths");
  for (const name of VARS) vi.stubEnv(name, undefined);
  vi.stubEnv("SHOAL_HOME", home);
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(home, { recursive: true, force: true });
});

async function file(path: string, mode = 0o755): Promise<string> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, "#!/bin/sh\n");
  await chmod(path, mode);
  return path;
}

function missing(fn: () => string): MissingPrerequisiteError {
  try {
    fn();
  } catch (error) {
    if (error instanceof MissingPrerequisiteError) return error;
    throw error;
  }
  throw new Error("expected MissingPrerequisiteError, nothing was thrown");
}

describe("shoalHome", () => {
  it("is SHOAL_HOME when it exists", () => {
    expect(shoalHome()).toBe(home);
  });

  it("defaults to $HOME/.cache/shoal", async () => {
    vi.stubEnv("SHOAL_HOME", undefined);
    vi.stubEnv("HOME", home);
    await mkdir(join(home, ".cache", "shoal"), { recursive: true });
    expect(shoalHome()).toBe(join(home, ".cache", "shoal"));
  });

  it("treats an empty SHOAL_HOME as unset", () => {
    vi.stubEnv("SHOAL_HOME", "");
    vi.stubEnv("HOME", home);
    expect(missing(shoalHome).path).toBe(join(home, ".cache", "shoal"));
  });

  it("names the missing directory, the variable and the setup command", () => {
    vi.stubEnv("SHOAL_HOME", join(home, "absent"));
    const error = missing(shoalHome);
    expect(error.message).toContain(join(home, "absent"));
    expect(error.message).toContain("SHOAL_HOME");
    expect(error.message).toContain("bash tools/setup/bootstrap.sh");
  });
});

describe("natsServerBinary", () => {
  it("defaults to $SHOAL_HOME/bin/nats-server", async () => {
    const path = await file(join(home, "bin", "nats-server"));
    expect(natsServerBinary()).toBe(path);
  });

  it("prefers SHOAL_NATS_SERVER", async () => {
    await file(join(home, "bin", "nats-server"));
    const path = await file(join(home, "elsewhere", "nats"));
    vi.stubEnv("SHOAL_NATS_SERVER", path);
    expect(natsServerBinary()).toBe(path);
  });

  it("reports a missing binary", () => {
    const error = missing(natsServerBinary);
    expect(error).toMatchObject({
      path: join(home, "bin", "nats-server"),
      envVar: "SHOAL_NATS_SERVER",
    });
    expect(error.message).toMatch(/^nats-server binary not found at .*bootstrap\.sh/);
  });

  it("reports a file that is not executable", async () => {
    await file(join(home, "bin", "nats-server"), 0o644);
    expect(missing(natsServerBinary).message).toContain("not an executable file");
  });

  it("reports a directory in place of the binary", async () => {
    await mkdir(join(home, "bin", "nats-server"), { recursive: true });
    expect(missing(natsServerBinary).message).toContain("not an executable file");
  });
});

describe("sidecarBinary", () => {
  it("defaults to $SHOAL_HOME/cargo-target/release/shoal-sidecar", async () => {
    const path = await file(join(home, "cargo-target", "release", "shoal-sidecar"));
    expect(sidecarBinary()).toBe(path);
  });

  it("prefers $CARGO_TARGET_DIR over the default", async () => {
    await file(join(home, "cargo-target", "release", "shoal-sidecar"));
    const path = await file(join(home, "target", "release", "shoal-sidecar"));
    vi.stubEnv("CARGO_TARGET_DIR", join(home, "target"));
    expect(sidecarBinary()).toBe(path);
  });

  it("prefers SHOAL_SIDECAR_BIN over everything", async () => {
    await file(join(home, "target", "release", "shoal-sidecar"));
    vi.stubEnv("CARGO_TARGET_DIR", join(home, "target"));
    const path = await file(join(home, "my-sidecar"));
    vi.stubEnv("SHOAL_SIDECAR_BIN", path);
    expect(sidecarBinary()).toBe(path);
  });

  it("reports the path it looked at", () => {
    vi.stubEnv("CARGO_TARGET_DIR", join(home, "target"));
    const error = missing(sidecarBinary);
    expect(error).toMatchObject({
      path: join(home, "target", "release", "shoal-sidecar"),
      envVar: "SHOAL_SIDECAR_BIN",
    });
  });
});

describe("minilmDir", () => {
  const modelDir = (): string => join(home, "models", "all-minilm-l6-v2");

  async function model(files: readonly string[]): Promise<void> {
    await mkdir(modelDir(), { recursive: true });
    for (const name of files) await writeFile(join(modelDir(), name), "{}");
  }

  it("defaults to $SHOAL_HOME/models/all-minilm-l6-v2 with the files a load needs", async () => {
    await model(["config.json", "tokenizer.json", "model.safetensors"]);
    expect(minilmDir()).toBe(modelDir());
  });

  it("prefers SHOAL_MINILM_DIR", async () => {
    await model(["config.json", "tokenizer.json", "model.safetensors"]);
    vi.stubEnv("SHOAL_MINILM_DIR", join(home, "other"));
    expect(missing(minilmDir).path).toBe(join(home, "other"));
  });

  it("names a missing weights file", async () => {
    await model(["config.json", "tokenizer.json"]);
    const error = missing(minilmDir);
    expect(error.message).toContain("model.safetensors is missing");
    expect(error.message).toContain("bash tools/setup/bootstrap.sh");
  });
});

describe("repoRoot", () => {
  it("is the directory holding nx.json and this lib", () => {
    const root = repoRoot();
    expect(existsSync(join(root, "nx.json"))).toBe(true);
    expect(existsSync(join(root, "libs", "testing", "src", "paths.ts"))).toBe(true);
  });
});
