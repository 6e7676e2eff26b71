import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compileCatalog, modelsDir, type Catalog } from "@shoal/config";
import { minilmDir, repoRoot } from "./paths.js";

/** The catalog the cluster ships (`deploy/catalog/default.json`), against this machine's cache. */
export function defaultCatalog(): Catalog {
  const path = join(repoRoot(), "deploy", "catalog", "default.json");
  return compileCatalog(JSON.parse(readFileSync(path, "utf8")), {
    modelsDir: modelsDir(process.env),
  });
}

/**
 * A catalog holding only MiniLM, from this machine's model cache as a local directory, for
 * tests of one component that must not depend on what the shipped catalog lists.
 */
export function minilmCatalog(): Catalog {
  return compileCatalog(
    {
      models: [
        {
          id: "sentence-transformers/all-MiniLM-L6-v2",
          key: "all-minilm-l6-v2",
          family: "embedding",
          dimensions: 384,
          maxInputTokens: 256,
          source: { kind: "dir", path: minilmDir() },
        },
      ],
    },
    { modelsDir: "/unused" },
  );
}
