import { fileURLToPath } from "node:url";
import { ConfigError } from "@shoal/config";

/** The catalog shipped in the repository, used when `SHOAL_CATALOG` is not set. */
export function defaultCatalogPath(): string {
  return fileURLToPath(new URL("../../../deploy/catalog/default.json", import.meta.url));
}

/** The config bundle shipped for a hardware profile: `bundles/<profile>.json`. */
export function bundlePath(profile: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(profile)) {
    throw new ConfigError(
      `hardware profile must be a lower-case name such as "cpu", got "${profile}"`,
    );
  }
  return fileURLToPath(new URL(`../../../bundles/${profile}.json`, import.meta.url));
}
