import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "@shoal/config";

/**
 * Where the files shipped with Shoal are (`deploy/catalog/`, `bundles/`): SHOAL_SHARE_DIR when
 * set; else `share/` beside a production bundle (`npm run build` puts them there); else the
 * repository, when running from source.
 */
function shareDir(): string {
  const set = process.env["SHOAL_SHARE_DIR"];
  if (set !== undefined && set !== "") return set;
  const besideBundle = fileURLToPath(new URL("./share", import.meta.url));
  if (existsSync(besideBundle)) return besideBundle;
  return fileURLToPath(new URL("../../..", import.meta.url));
}

/** The catalog shipped in the repository, used when `SHOAL_CATALOG` is not set. */
export function defaultCatalogPath(): string {
  return join(shareDir(), "deploy/catalog/default.json");
}

/** The config bundle shipped for a hardware profile: `bundles/<profile>.json`. */
export function bundlePath(profile: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(profile)) {
    throw new ConfigError(
      `hardware profile must be a lower-case name such as "cpu", got "${profile}"`,
    );
  }
  return join(shareDir(), `bundles/${profile}.json`);
}
