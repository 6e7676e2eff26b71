import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ModelSource } from "@shoal/config";
import type { ModelLayout } from "./model-files.js";

/**
 * The completion marker. It is written last inside the staging directory, which is then renamed
 * into place, so a model directory either has a marker vouching for every file or is treated as
 * incomplete and fetched again.
 */
export const MARKER_FILE = ".shoal-complete.json";

/** One file the marker vouches for. */
export interface MarkerFile {
  readonly name: string;
  readonly size: number;
  /** Lower-case hex sha256 of the file's bytes as fetched. */
  readonly sha256: string;
}

export interface ModelMarker {
  readonly version: 1;
  readonly modelId: string;
  /** The source the files came from; a catalog that changes it makes the directory stale. */
  readonly source: ModelSource;
  readonly files: readonly MarkerFile[];
  /** ISO 8601 time the directory was completed, for operators. */
  readonly completedAt: string;
}

/** Writes the marker and flushes it to disk, so it never exists half-written after a crash. */
export async function writeMarker(dir: string, marker: ModelMarker): Promise<void> {
  await writeFile(join(dir, MARKER_FILE), `${JSON.stringify(marker, null, 2)}\n`, {
    flag: "wx",
    flush: true,
  });
}

/**
 * The directory's marker if it is valid for `source` and `layout` and every file it lists is on
 * disk with the recorded size; otherwise undefined. Sizes, not hashes, are re-checked: hashing gigabytes
 * of weights on every start would cost more than the truncation it could still catch.
 */
export async function readValidMarker(
  dir: string,
  source: ModelSource,
  layout: ModelLayout,
): Promise<ModelMarker | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(dir, MARKER_FILE), "utf8"));
  } catch {
    return undefined;
  }
  const marker = checkMarker(raw, source, layout);
  if (marker === undefined) return undefined;
  for (const file of marker.files) {
    try {
      const info = await stat(join(dir, file.name));
      if (!info.isFile() || info.size !== file.size) return undefined;
    } catch {
      return undefined;
    }
  }
  return marker;
}

/**
 * Structural check of a parsed marker against the source and the layout (from the weights
 * format) the catalog now names. Pure, so the rules are unit-tested without a filesystem.
 */
export function checkMarker(
  raw: unknown,
  source: ModelSource,
  layout: ModelLayout,
): ModelMarker | undefined {
  if (!isRecord(raw) || raw["version"] !== 1) return undefined;
  const { modelId, files, completedAt } = raw;
  if (typeof modelId !== "string" || typeof completedAt !== "string") return undefined;
  if (!sameSource(raw["source"], source)) return undefined;
  if (!Array.isArray(files) || !files.every(isMarkerFile)) return undefined;
  const names = new Set(files.map((file) => file.name));
  if (names.size !== files.length) return undefined;
  if (![...names].every((name) => layout.all.includes(name))) return undefined;
  if (!layout.required.every((name) => names.has(name))) return undefined;
  return { version: 1, modelId, source, files, completedAt };
}

function sameSource(raw: unknown, source: ModelSource): boolean {
  if (!isRecord(raw)) return false;
  const expected = Object.entries(source);
  return (
    Object.keys(raw).length === expected.length &&
    expected.every(([key, value]) => raw[key] === value)
  );
}

function isMarkerFile(value: unknown): value is MarkerFile {
  return (
    isRecord(value) &&
    typeof value["name"] === "string" &&
    typeof value["size"] === "number" &&
    Number.isSafeInteger(value["size"]) &&
    value["size"] > 0 &&
    typeof value["sha256"] === "string" &&
    /^[0-9a-f]{64}$/.test(value["sha256"])
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
