import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { WeightsFormat } from "@shoal/config";
import { GGUF_FILE } from "@shoal/model-sources";
import { readGgufMetadata, type GgufLimits, type GgufValue } from "./gguf-metadata.js";

/**
 * The dimensions of a Llama-family base model that decide every LoRA matrix's shape: an
 * adapter is checked against these before it is stored, so a worker never finds out at load
 * time that it was trained for another model.
 */
export interface BaseShape {
  /** Decoder layers (`num_hidden_layers`, GGUF `llama.block_count`). */
  readonly layers: number;
  /** Residual width (`hidden_size`, `llama.embedding_length`). */
  readonly hiddenSize: number;
  /** MLP width (`intermediate_size`, `llama.feed_forward_length`). */
  readonly intermediateSize: number;
  /** Query heads (`num_attention_heads`, `llama.attention.head_count`). */
  readonly heads: number;
  /** Key/value heads, fewer than `heads` under grouped-query attention. */
  readonly kvHeads: number;
  /** Width of one head (`head_dim`, `llama.attention.key_length`, else hidden / heads). */
  readonly headDim: number;
}

/** A base model whose shape cannot be read or is not a Llama decoder. */
export class InvalidBaseModelError extends Error {
  override readonly name = "InvalidBaseModelError";
}

/** A `config.json` larger than this is not a transformers config. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Reads the shape of the base model in `modelDir`: from `model.gguf`'s metadata for `gguf`
 * weights, else from the transformers `config.json`.
 *
 * @throws InvalidBaseModelError when the file is unreadable, malformed or not Llama.
 */
export async function readBaseShape(
  modelDir: string,
  weights: WeightsFormat,
  limits?: GgufLimits,
): Promise<BaseShape> {
  if (weights === "gguf") {
    const path = join(modelDir, GGUF_FILE);
    let metadata: ReadonlyMap<string, GgufValue>;
    try {
      metadata = await readGgufMetadata(path, limits);
    } catch (cause) {
      throw new InvalidBaseModelError(`${path}: ${describe(cause)}`, { cause });
    }
    return shapeFromGgufMetadata(metadata);
  }
  const path = join(modelDir, "config.json");
  let config: unknown;
  try {
    const { size } = await stat(path);
    if (size > MAX_CONFIG_BYTES) throw new Error(`${size} bytes is too large for a config`);
    config = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new InvalidBaseModelError(`${path}: ${describe(cause)}`, { cause });
  }
  return shapeFromTransformersConfig(config);
}

/**
 * The shape from GGUF metadata (the keys llama.cpp writes for `general.architecture = llama`).
 *
 * @throws InvalidBaseModelError when a key is missing, mistyped or inconsistent.
 */
export function shapeFromGgufMetadata(metadata: ReadonlyMap<string, GgufValue>): BaseShape {
  const architecture = metadata.get("general.architecture");
  if (architecture?.type !== "string" || architecture.value !== "llama") {
    const found = architecture?.type === "string" ? `"${architecture.value}"` : "none";
    throw new InvalidBaseModelError(`general.architecture must be "llama", found ${found}`);
  }
  const int = (key: string): number | undefined => {
    const value = metadata.get(key);
    if (value === undefined) return undefined;
    if (value.type !== "int") throw new InvalidBaseModelError(`${key} is not an integer`);
    return Number(value.value);
  };
  return readShape(int, GGUF_KEYS, "GGUF", "");
}

/**
 * The shape from a transformers `config.json` with `model_type: "llama"`.
 *
 * @throws InvalidBaseModelError when it is another architecture or a field is missing.
 */
export function shapeFromTransformersConfig(config: unknown): BaseShape {
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    throw new InvalidBaseModelError("config.json is not a JSON object");
  }
  const fields = config as Record<string, unknown>;
  if (fields["model_type"] !== "llama") {
    throw new InvalidBaseModelError(
      `config.json model_type must be "llama", found ${JSON.stringify(fields["model_type"] ?? null)}`,
    );
  }
  const int = (key: string): number | undefined => {
    const value = fields[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      throw new InvalidBaseModelError(`config.json ${key} is not an integer`);
    }
    return value;
  };
  return readShape(int, CONFIG_KEYS, "config.json", "config.json ");
}

/** Where one source keeps each dimension; `kvHeads` and `headDim` may be absent. */
type ShapeKeys = Readonly<Record<keyof BaseShape, string>>;

const GGUF_KEYS: ShapeKeys = {
  layers: "llama.block_count",
  hiddenSize: "llama.embedding_length",
  intermediateSize: "llama.feed_forward_length",
  heads: "llama.attention.head_count",
  kvHeads: "llama.attention.head_count_kv",
  headDim: "llama.attention.key_length",
};

const CONFIG_KEYS: ShapeKeys = {
  layers: "num_hidden_layers",
  hiddenSize: "hidden_size",
  intermediateSize: "intermediate_size",
  heads: "num_attention_heads",
  kvHeads: "num_key_value_heads",
  headDim: "head_dim",
};

/**
 * Reads the dimensions through `int`, fills those the source may leave out (kv heads default
 * to heads, the head width to hidden / heads), and checks it all adds up. `prefix` starts the
 * message for a missing key.
 */
function readShape(
  int: (key: string) => number | undefined,
  keys: ShapeKeys,
  source: string,
  prefix: string,
): BaseShape {
  const required = (key: string): number => {
    const value = int(key);
    if (value === undefined) throw new InvalidBaseModelError(`${prefix}${key} is missing`);
    return value;
  };
  const heads = required(keys.heads);
  const shape = {
    layers: required(keys.layers),
    hiddenSize: required(keys.hiddenSize),
    intermediateSize: required(keys.intermediateSize),
    heads,
    kvHeads: int(keys.kvHeads) ?? heads,
    headDim: int(keys.headDim),
  };
  const { hiddenSize, kvHeads } = shape;
  for (const [field, value] of Object.entries(shape)) {
    if (value !== undefined && (value < 1 || value > 1_000_000)) {
      throw new InvalidBaseModelError(`${source}: ${field} ${value} is implausible`);
    }
  }
  if (heads % kvHeads !== 0) {
    throw new InvalidBaseModelError(
      `${source}: ${heads} heads do not group into ${kvHeads} kv heads`,
    );
  }
  if (shape.headDim === undefined && hiddenSize % heads !== 0) {
    throw new InvalidBaseModelError(
      `${source}: hidden size ${hiddenSize} does not split into ${heads} heads`,
    );
  }
  return { ...shape, headDim: shape.headDim ?? hiddenSize / heads };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
