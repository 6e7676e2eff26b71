import { ConfigError } from "./errors.js";

/**
 * How a model is served: its batch budget, how a worker fills batches of it, its length
 * buckets and, for generators, the default completion length. Each field is optional; unset
 * ones fall back to the worker's (or annotator's) own settings. Tuned values for a hardware
 * profile come from a config bundle (`bundle.ts`), which overlays these per model.
 */
export interface ServingDefaults {
  /** Padded tokens (inputs × longest input) in one batch of this model, at most. */
  readonly maxPaddedTokens?: number;
  /** Inputs in one batch of this model, at most. */
  readonly maxInputs?: number;
  /** The latency a batch is sized for: the batch cost budget, ms. */
  readonly batchTargetMs?: number;
  /** How long a worker tops a batch up with work already queued, ms. */
  readonly maxFillWaitMs?: number;
  /** Items one pull asks the queue for, at most (the fetch size). */
  readonly fetchSize?: number;
  /** Batches a worker keeps on the sidecar at once: 2 prefetches the next while one runs. */
  readonly batchesInFlight?: number;
  /**
   * Threads the sidecar runs this batch model on, each taking its own batches with its own
   * copy of the weights. On a CPU, N batches side by side on cores of their own outrun one
   * batch split across all of them (docs/benchmarks.md); the worker then keeps at least N
   * batches in flight and gives each batch cores ÷ N compute threads. Generators take 1.
   * @default 1
   */
  readonly modelThreads?: number;
  /** Length-bucket edges in tokens, ascending; the model's maximum closes the list. */
  readonly bucketEdges?: readonly number[];
  /** Tokens a generation produces when the request sets no `max_tokens`. */
  readonly maxNewTokens?: number;
  /**
   * Copies of the model to keep resident: a node's model-loader keeps a pinned model on this
   * many accelerators whatever the demand, and a static placement (the fleet bench) gives it
   * this many. @default 1
   */
  readonly replicas?: number;
  /**
   * What an encoder computes in on the sidecar: `f16` or `bf16` halve its memory and run on a
   * GPU's tensor cores; heads and pooling stay f32. Generators accept only `f32`.
   *
   * @default "f32"
   */
  readonly dtype?: ComputeDtype;
  /**
   * The model's batch cost on this hardware, µs (`fixed + perSequence × rows + perPaddedToken ×
   * padded tokens`): what a worker sizes its first batches with, before it has learned the cost
   * from its own. Without it a worker starts from a CPU-encoder guess.
   */
  readonly batchCostPrior?: BatchCostPrior;
}

/** The precisions a Candle encoder can compute in (the sidecar's `load` `dtype`). */
export const COMPUTE_DTYPES = ["f32", "f16", "bf16"] as const;
export type ComputeDtype = (typeof COMPUTE_DTYPES)[number];

/** Batch cost terms, µs; see {@link ServingDefaults.batchCostPrior}. */
export interface BatchCostPrior {
  readonly fixedUs: number;
  readonly perSequenceUs: number;
  readonly perPaddedTokenUs: number;
}

/**
 * Parameters of the model when it is loaded on a simulated sidecar (`--backend sim`,
 * docs/simulated-backend.md): scale tests describe twenty models in a catalog without twenty
 * sets of weights. Ignored by real backends. The sidecar validates the values.
 */
export interface SimModelParams {
  readonly profile?: string;
  readonly dim?: number;
  readonly maxInputTokens?: number;
  /** What the simulated model reports as its loaded size (`memory_bytes`). */
  readonly memoryBytes?: number;
  /** How long a load takes on the simulated device, ms (0: instant). */
  readonly loadMs?: number;
  readonly fixedUs?: number;
  readonly perSequenceUs?: number;
  readonly perPaddedTokenNs?: number;
}

/** Settings that are counts or milliseconds: integers ≥ 1, except a fill wait may be 0. */
const SERVING_INTEGERS = [
  "maxPaddedTokens",
  "maxInputs",
  "batchTargetMs",
  "maxFillWaitMs",
  "fetchSize",
  "batchesInFlight",
  "modelThreads",
  "maxNewTokens",
  "replicas",
] as const;
const SERVING_KEYS = [...SERVING_INTEGERS, "bucketEdges", "batchCostPrior", "dtype"] as const;
const PRIOR_KEYS = ["fixedUs", "perSequenceUs", "perPaddedTokenUs"] as const;
const SIM_NUMBERS = [
  "dim",
  "maxInputTokens",
  "memoryBytes",
  "loadMs",
  "fixedUs",
  "perSequenceUs",
  "perPaddedTokenNs",
] as const;

/** The optional `serving` object of a catalog entry; closed, so a misspelt budget is an error. */
export function compileServing(raw: unknown, where: string): ServingDefaults {
  if (raw === undefined) return {};
  const obj = closedObject(raw, where, SERVING_KEYS);
  const out: Record<string, number | readonly number[] | BatchCostPrior | ComputeDtype> = {};
  for (const key of SERVING_INTEGERS) {
    const value = obj[key];
    if (value === undefined) continue;
    const min = key === "maxFillWaitMs" ? 0 : 1;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
      throw new ConfigError(`${where}.${key} must be an integer ≥ ${min}`);
    }
    out[key] = value;
  }
  if (obj["bucketEdges"] !== undefined) {
    out["bucketEdges"] = compileBucketEdges(obj["bucketEdges"], `${where}.bucketEdges`);
  }
  if (obj["batchCostPrior"] !== undefined) {
    out["batchCostPrior"] = compilePrior(obj["batchCostPrior"], `${where}.batchCostPrior`);
  }
  const dtype = obj["dtype"];
  if (dtype !== undefined) {
    if (!COMPUTE_DTYPES.includes(dtype as ComputeDtype)) {
      throw new ConfigError(`${where}.dtype must be one of ${COMPUTE_DTYPES.join(", ")}`);
    }
    out["dtype"] = dtype as ComputeDtype;
  }
  return out;
}

function compilePrior(raw: unknown, where: string): BatchCostPrior {
  const obj = closedObject(raw, where, PRIOR_KEYS);
  const terms: Record<string, number> = {};
  for (const key of PRIOR_KEYS) {
    const value = obj[key];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new ConfigError(`${where}.${key} must be a finite number ≥ 0 (µs)`);
    }
    terms[key] = value;
  }
  return terms as unknown as BatchCostPrior;
}

function compileBucketEdges(raw: unknown, where: string): readonly number[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new ConfigError(`${where} must be a non-empty array of token counts`);
  }
  raw.forEach((edge: unknown, i) => {
    if (typeof edge !== "number" || !Number.isSafeInteger(edge) || edge < 1) {
      throw new ConfigError(`${where}[${i}] must be an integer ≥ 1`);
    }
    if (i > 0 && edge <= (raw[i - 1] as number)) {
      throw new ConfigError(`${where} must be strictly ascending`);
    }
  });
  return Object.freeze([...(raw as number[])]);
}

/** The optional `sim` object of a catalog entry. */
export function compileSim(raw: unknown, where: string): SimModelParams | undefined {
  if (raw === undefined) return undefined;
  const obj = closedObject(raw, where, [...SIM_NUMBERS, "profile"]);
  const out: Record<string, number | string> = {};
  const profile = obj["profile"];
  if (profile !== undefined) {
    if (typeof profile !== "string" || profile === "") {
      throw new ConfigError(`${where}.profile must be a non-empty string`);
    }
    out["profile"] = profile;
  }
  for (const key of SIM_NUMBERS) {
    const value = obj[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new ConfigError(`${where}.${key} must be a finite number ≥ 0`);
    }
    out[key] = value;
  }
  return out;
}

/** The optional expected memory footprint of a loaded model, bytes. */
export function compileMemoryBytes(raw: unknown, where: string): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "number" || !Number.isSafeInteger(raw) || raw < 1) {
    throw new ConfigError(`${where} must be an integer ≥ 1 (bytes)`);
  }
  return raw;
}

function closedObject(
  raw: unknown,
  where: string,
  keys: readonly string[],
): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be an object`);
  }
  for (const key of Object.keys(raw)) {
    if (!keys.includes(key)) {
      throw new ConfigError(`${where}.${key} is not a known setting (${keys.join(", ")})`);
    }
  }
  return raw as Record<string, unknown>;
}
