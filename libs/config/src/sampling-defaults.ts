import { ConfigError } from "./errors.js";

/**
 * A generator's sampling defaults: what a request that leaves a field out is sampled with, as
 * serving tools take them from a checkpoint's `generation_config.json`. Small instruct models
 * are tuned for low temperatures; sampled at the OpenAI default of 1 they ramble.
 */
export interface SamplingDefaults {
  /** 0 is greedy. In 0..2. */
  readonly temperature?: number;
  /** Nucleus: the smallest set of tokens whose probability reaches it. In (0, 1]. */
  readonly topP?: number;
  /** Only the k likeliest tokens (0 keeps all). */
  readonly topK?: number;
  /** Drops tokens less likely than `minP` times the likeliest one. In 0..1. */
  readonly minP?: number;
  /** transformers' repetition penalty; 1 is off. In (0, 2]. */
  readonly repetitionPenalty?: number;
}

/** The ranges the gateway checks a request's own values against, so both agree. */
export const SAMPLING_RANGES = Object.freeze({
  temperature: { min: 0, max: 2, minExclusive: false },
  topP: { min: 0, max: 1, minExclusive: true },
  minP: { min: 0, max: 1, minExclusive: false },
  repetitionPenalty: { min: 0, max: 2, minExclusive: true },
});

const FIELDS = ["temperature", "topP", "topK", "minP", "repetitionPenalty"] as const;

/** A catalog entry's `sampling`: generators only; unknown fields and bad values refused. */
export function compileSamplingDefaults(
  raw: unknown,
  family: string,
  where: string,
): SamplingDefaults | undefined {
  if (raw === undefined) return undefined;
  if (family !== "generator") {
    throw new ConfigError(`${where} is only for family generator, not ${family}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be an object`);
  }
  const values = raw as Record<string, unknown>;
  for (const name of Object.keys(values)) {
    if (!(FIELDS as readonly string[]).includes(name)) {
      throw new ConfigError(`${where}.${name} is not a sampling setting (${FIELDS.join(", ")})`);
    }
  }
  const defaults: Record<string, number> = {};
  for (const [name, range] of Object.entries(SAMPLING_RANGES)) {
    const value = values[name];
    if (value === undefined) continue;
    const above = (v: number): boolean => (range.minExclusive ? v > range.min : v >= range.min);
    if (typeof value !== "number" || !above(value) || !(value <= range.max)) {
      const bounds = `${range.minExclusive ? "(" : "["}${range.min}, ${range.max}]`;
      throw new ConfigError(`${where}.${name} must be a number in ${bounds}`);
    }
    defaults[name] = value;
  }
  const topK = values["topK"];
  if (topK !== undefined) {
    if (typeof topK !== "number" || !Number.isInteger(topK) || topK < 0) {
      throw new ConfigError(`${where}.topK must be a non-negative integer`);
    }
    defaults["topK"] = topK;
  }
  return defaults;
}

/** generation_config.json's names for the settings above. */
const CHECKPOINT_NAMES: Readonly<Record<string, keyof SamplingDefaults>> = {
  temperature: "temperature",
  top_p: "topP",
  top_k: "topK",
  min_p: "minP",
  repetition_penalty: "repetitionPenalty",
};

/**
 * The sampling settings a checkpoint's `generation_config.json` ships, read as vLLM reads them:
 * the five fields alone (`do_sample` is transformers' switch, not a default). A value out of
 * range is left out and named in `refused`, so a checkpoint's oddity never stops a model.
 */
export function samplingFromGenerationConfig(raw: unknown): {
  readonly defaults: SamplingDefaults;
  readonly refused: readonly string[];
} {
  const defaults: Record<string, number> = {};
  const refused: string[] = [];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { defaults, refused: ["generation_config.json is not an object"] };
  }
  for (const [name, setting] of Object.entries(CHECKPOINT_NAMES)) {
    const value = (raw as Record<string, unknown>)[name];
    if (value === undefined || value === null) continue;
    try {
      Object.assign(
        defaults,
        compileSamplingDefaults({ [setting]: value }, "generator", "generation_config"),
      );
    } catch (err) {
      refused.push((err as Error).message);
    }
  }
  return { defaults, refused };
}
