import { ConfigError, parseIntSetting } from "@shoal/config";

export type Env = Readonly<Record<string, string | undefined>>;

/** A string setting from the environment, or its default. */
export function envString(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === "" ? fallback : value;
}

/** An optional string setting. */
export function envOptional(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** An optional integer setting; a malformed one is a startup error naming the variable. */
export function envInt(env: Env, name: string): number | undefined {
  return parseIntSetting(name, env[name]);
}

/** An integer percent setting as a fraction (`10` → 0.1). */
export function envPercent(env: Env, name: string): number | undefined {
  const value = envInt(env, name);
  return value === undefined ? undefined : value / 100;
}

/** A comma-separated list setting. */
export function envList(env: Env, name: string): string[] | undefined {
  const value = envOptional(env, name);
  return value
    ?.split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** A required setting. */
export function envRequired(env: Env, name: string): string {
  const value = envOptional(env, name);
  if (value === undefined) throw new ConfigError(`${name} must be set`);
  return value;
}
