import { accessSync, constants, existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MissingPrerequisiteError } from "./missing-prerequisite-error.js";

// These resolvers mirror tools/setup/env.sh, so tests find exactly what the setup script
// installed, and any of its variables pointed elsewhere by a user or CI is honoured here too.

/** Root of Shoal's machine-wide caches: `SHOAL_HOME`, else `$HOME/.cache/shoal`. */
export function shoalHome(): string {
  const path = shoalHomePath();
  if (!isDirectory(path))
    throw new MissingPrerequisiteError("Shoal home directory", path, "SHOAL_HOME");
  return path;
}

/** The repository root: the nearest directory above this file that holds `nx.json`. */
export function repoRoot(): string {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "nx.json"))) return dir;
    if (dirname(dir) === dir) {
      throw new Error(
        `no nx.json in any directory above ${start}; is @shoal/testing inside a Shoal checkout?`,
      );
    }
  }
}

/** The pinned nats-server: `SHOAL_NATS_SERVER`, else `$SHOAL_HOME/bin/nats-server`. */
export function natsServerBinary(): string {
  const path = env("SHOAL_NATS_SERVER") ?? join(shoalHomePath(), "bin", "nats-server");
  return executable("nats-server binary", path, "SHOAL_NATS_SERVER");
}

/** The S3-compatible test server: `SHOAL_S3_SERVER`, else `$SHOAL_HOME/bin/s3s-fs`. */
export function s3ServerBinary(): string {
  const path = env("SHOAL_S3_SERVER") ?? join(shoalHomePath(), "bin", "s3s-fs");
  return executable("s3s-fs binary (tools/setup/s3-server.sh)", path, "SHOAL_S3_SERVER");
}

/** The headless browser of the console's tests: `SHOAL_CHROMIUM`, else Debian's Chromium. */
export function chromiumBinary(): string {
  const path = env("SHOAL_CHROMIUM") ?? "/usr/bin/chromium";
  return executable("Chromium (tools/setup/browser.sh)", path, "SHOAL_CHROMIUM");
}

/** The trace backend (Jaeger v2): `SHOAL_JAEGER`, else `$SHOAL_HOME/bin/jaeger`. */
export function jaegerBinary(): string {
  const path = env("SHOAL_JAEGER") ?? join(shoalHomePath(), "bin", "jaeger");
  return executable("jaeger binary (tools/setup/trace-backend.sh)", path, "SHOAL_JAEGER");
}

/**
 * The sidecar release binary: `SHOAL_SIDECAR_BIN`, else `$CARGO_TARGET_DIR/release/shoal-sidecar`,
 * else `$SHOAL_HOME/cargo-target/release/shoal-sidecar`.
 */
export function sidecarBinary(): string {
  const targetDir = env("CARGO_TARGET_DIR") ?? join(shoalHomePath(), "cargo-target");
  const path = env("SHOAL_SIDECAR_BIN") ?? join(targetDir, "release", "shoal-sidecar");
  return executable("shoal-sidecar binary", path, "SHOAL_SIDECAR_BIN");
}

/**
 * The Python of llama-cpp-python's venv, whose `llama_cpp.server` is the OpenAI-compatible
 * engine external-runtime tests run: `SHOAL_LLAMA_PYTHON`, else
 * `$SHOAL_HOME/venv-llama/bin/python` (tools/setup/llama-cpp-python.sh).
 */
export function llamaPython(): string {
  const path = env("SHOAL_LLAMA_PYTHON") ?? join(shoalHomePath(), "venv-llama", "bin", "python");
  return executable(
    "llama-cpp-python (tools/setup/llama-cpp-python.sh)",
    path,
    "SHOAL_LLAMA_PYTHON",
  );
}

/** Files the sidecar needs to load a sentence-transformers model. */
const MODEL_FILES = ["config.json", "tokenizer.json", "model.safetensors"] as const;

/** The weights file of a `gguf` model directory (`GGUF_FILE` in `@shoal/model-sources`). */
const GGUF_FILE = "model.gguf";

/**
 * The SmolLM2-135M-Instruct weights (Q4_1 GGUF), what the sidecar's `load` takes as a file:
 * `SHOAL_SMOLLM2_GGUF`, else `$SHOAL_HOME/models/smollm2-135m-instruct/model.gguf`, where the
 * catalog fetch puts it.
 */
export function smollm2Gguf(): string {
  const path =
    env("SHOAL_SMOLLM2_GGUF") ??
    join(shoalHomePath(), "models", "smollm2-135m-instruct", GGUF_FILE);
  if (!isFile(path)) {
    throw new MissingPrerequisiteError("SmolLM2-135M-Instruct GGUF", path, "SHOAL_SMOLLM2_GGUF");
  }
  return path;
}

/**
 * The directory of {@link smollm2Gguf}, for catalogs that name SmolLM2 as a `gguf` model
 * directory: model-sources and the sidecar look for the weights there under `model.gguf`.
 */
export function smollm2Dir(): string {
  const path = smollm2Gguf();
  if (basename(path) !== GGUF_FILE) {
    throw new MissingPrerequisiteError(
      "SmolLM2-135M-Instruct model directory",
      path,
      "SHOAL_SMOLLM2_GGUF",
      `a gguf model directory holds its weights as ${GGUF_FILE}`,
    );
  }
  return dirname(path);
}

/**
 * The all-MiniLM-L6-v2 model directory: `SHOAL_MINILM_DIR`, else
 * `$SHOAL_HOME/models/all-minilm-l6-v2`. Checked for the files a load needs, so a half-unpacked
 * model fails here with its path rather than later as an opaque `load_failed`.
 */
export function minilmDir(): string {
  const path = env("SHOAL_MINILM_DIR") ?? join(shoalHomePath(), "models", "all-minilm-l6-v2");
  if (!isDirectory(path))
    throw new MissingPrerequisiteError(
      "all-MiniLM-L6-v2 model directory",
      path,
      "SHOAL_MINILM_DIR",
    );
  for (const file of MODEL_FILES) {
    if (!existsSync(join(path, file))) {
      throw new MissingPrerequisiteError(
        "all-MiniLM-L6-v2 model directory",
        path,
        "SHOAL_MINILM_DIR",
        `${file} is missing`,
      );
    }
  }
  return path;
}

function shoalHomePath(): string {
  return env("SHOAL_HOME") ?? join(homedir(), ".cache", "shoal");
}

/** An environment variable, with an empty value treated as unset (as the shell scripts do). */
function env(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === "" ? undefined : value;
}

function executable(what: string, path: string, envVar: string): string {
  if (!existsSync(path)) throw new MissingPrerequisiteError(what, path, envVar);
  try {
    if (!statSync(path).isFile()) throw new Error("not a file");
    accessSync(path, constants.X_OK);
  } catch {
    throw new MissingPrerequisiteError(what, path, envVar, "not an executable file");
  }
  return path;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
