import { compileCatalog, type Catalog } from "@shoal/config";
import { minilmDir } from "@shoal/testing";

export const MODEL = "sentence-transformers/all-MiniLM-L6-v2";

/** A catalog holding MiniLM from the machine's model cache, whatever the shipped catalog says. */
export function minilmCatalog(): Catalog {
  return compileCatalog(
    {
      models: [
        {
          id: MODEL,
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
