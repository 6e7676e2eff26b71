import { existsSync } from "node:fs";
import {
  ConfigError,
  loadBundle,
  loadCatalog,
  modelsDir,
  type BundleSource,
  type Catalog,
  type ConfigBundle,
} from "@shoal/config";
import type { Env } from "./env.js";
import { envOptional, envString } from "./env.js";
import { bundlePath, defaultCatalogPath } from "./paths.js";

/**
 * The catalog a service serves: `SHOAL_CATALOG`, else the one shipped in `deploy/catalog`,
 * with the tuned settings of the config bundle for this hardware laid over it (see
 * {@link bundleFromEnv}).
 */
export async function catalogFromEnv(env: Env): Promise<Catalog> {
  const bundle = await bundleFromEnv(env);
  return loadCatalog(envString(env, "SHOAL_CATALOG", defaultCatalogPath()), {
    modelsDir: modelsDir(env),
    ...(bundle === undefined ? {} : { bundle }),
  });
}

/**
 * `SHOAL_BUNDLE`: a bundle file, or `none` for the untuned defaults. Unset: the bundle shipped
 * for the hardware profile `SHOAL_HARDWARE_PROFILE` (default `cuda` when `SHOAL_DEVICE` names
 * a CUDA device, else `cpu`), `bundles/<profile>.json`, when the repository has one. A profile
 * named explicitly must have its bundle; an inferred one without a bundle means defaults.
 */
export async function bundleFromEnv(
  env: Env,
): Promise<{ bundle: ConfigBundle; source: BundleSource } | undefined> {
  const setting = envOptional(env, "SHOAL_BUNDLE");
  if (setting === "none") return undefined;
  const named = envOptional(env, "SHOAL_HARDWARE_PROFILE");
  const profile =
    named ?? (envString(env, "SHOAL_DEVICE", "cpu").startsWith("cuda") ? "cuda" : "cpu");
  const path = setting ?? bundlePath(profile);
  if (setting === undefined && !existsSync(path)) {
    if (named === undefined) return undefined;
    throw new ConfigError(`SHOAL_HARDWARE_PROFILE=${named}: no bundle at ${path}`);
  }
  const bundle = await loadBundle(path);
  return { bundle, source: { profile: bundle.profile, path } };
}
