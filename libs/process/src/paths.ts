import { fileURLToPath } from "node:url";

/** The catalog shipped in the repository, used when `SHOAL_CATALOG` is not set. */
export function defaultCatalogPath(): string {
  return fileURLToPath(new URL("../../../deploy/catalog/default.json", import.meta.url));
}
