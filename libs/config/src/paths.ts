import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Shoal's cache root outside any clone (weights, binaries, build output), so a fresh clone
 * reuses what an earlier one fetched. `SHOAL_HOME` overrides it.
 */
export function shoalHome(env: Readonly<Record<string, string | undefined>>): string {
  const configured = env["SHOAL_HOME"];
  return configured !== undefined && configured !== ""
    ? configured
    : join(homedir(), ".cache", "shoal");
}

/** Where model files are cached: `SHOAL_MODELS`, else `<SHOAL_HOME>/models`. */
export function modelsDir(env: Readonly<Record<string, string | undefined>>): string {
  const configured = env["SHOAL_MODELS"];
  return configured !== undefined && configured !== ""
    ? configured
    : join(shoalHome(env), "models");
}

/** Where LoRA adapters fetched from the registry are kept: `SHOAL_ADAPTERS`, else `<SHOAL_HOME>/adapters`. */
export function adaptersDir(env: Readonly<Record<string, string | undefined>>): string {
  const configured = env["SHOAL_ADAPTERS"];
  return configured !== undefined && configured !== ""
    ? configured
    : join(shoalHome(env), "adapters");
}
