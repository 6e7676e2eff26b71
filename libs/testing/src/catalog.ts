import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compileCatalog, modelsDir, type Catalog } from "@shoal/config";
import { repoRoot } from "./paths.js";

/** The catalog the cluster ships (`deploy/catalog/default.json`), against this machine's cache. */
export function defaultCatalog(): Catalog {
  const path = join(repoRoot(), "deploy", "catalog", "default.json");
  return compileCatalog(JSON.parse(readFileSync(path, "utf8")), {
    modelsDir: modelsDir(process.env),
  });
}
