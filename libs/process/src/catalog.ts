import { loadCatalog, modelsDir, type Catalog } from "@shoal/config";
import type { Env } from "./env.js";
import { envString } from "./env.js";
import { defaultCatalogPath } from "./paths.js";

/** The catalog a service serves: `SHOAL_CATALOG`, else the one shipped in `deploy/catalog`. */
export function catalogFromEnv(env: Env): Promise<Catalog> {
  return loadCatalog(envString(env, "SHOAL_CATALOG", defaultCatalogPath()), {
    modelsDir: modelsDir(env),
  });
}
