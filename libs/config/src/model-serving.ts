import { ConfigError } from "./errors.js";

/**
 * How a model is served when nothing else says: the batch budget a worker starts from for it
 * and, for generators, the default completion length. Each field is optional; a worker falls
 * back to its own settings for an unset one.
 */
export interface ServingDefaults {
  /** Padded tokens (inputs × longest input) in one batch of this model. */
  readonly maxPaddedTokens?: number;
  /** Inputs in one batch of this model. */
  readonly maxInputs?: number;
  /** Tokens a generation produces when the request sets no `max_tokens`. */
  readonly maxNewTokens?: number;
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
  readonly fixedUs?: number;
  readonly perSequenceUs?: number;
  readonly perPaddedTokenNs?: number;
}

const SERVING_KEYS = ["maxPaddedTokens", "maxInputs", "maxNewTokens"] as const;
const SIM_NUMBERS = [
  "dim",
  "maxInputTokens",
  "memoryBytes",
  "fixedUs",
  "perSequenceUs",
  "perPaddedTokenNs",
] as const;

/** The optional `serving` object of a catalog entry; closed, so a misspelt budget is an error. */
export function compileServing(raw: unknown, where: string): ServingDefaults {
  if (raw === undefined) return {};
  const obj = closedObject(raw, where, SERVING_KEYS);
  const out: Record<string, number> = {};
  for (const key of SERVING_KEYS) {
    const value = obj[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      throw new ConfigError(`${where}.${key} must be an integer ≥ 1`);
    }
    out[key] = value;
  }
  return out;
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
