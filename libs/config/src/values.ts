import { ConfigError } from "./errors.js";

/** Validates an integer setting within `[min, max]`, naming the setting when it is not. */
export function intInRange(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

/** Parses an optional integer from a string (an environment variable or flag). */
export function parseIntSetting(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  }
  return Number(raw.trim());
}
