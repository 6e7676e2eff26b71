/** Configuration shared by every Shoal process: the model catalog and setting validation. */
export { loadCatalog, compileCatalog, restrictCatalog } from "./catalog.js";
export type {
  Catalog,
  CatalogOptions,
  ModelEntry,
  ModelFamily,
  ModelSource,
  OpenAiSource,
  WeightsFormat,
} from "./catalog.js";
export { compileBundle, loadBundle } from "./bundle.js";
export type { BundleSource, ConfigBundle } from "./bundle.js";
export { ConfigError } from "./errors.js";
export type { EmbeddingPrompts } from "./embedding-prompts.js";
export { COMPUTE_DTYPES } from "./model-serving.js";
export type {
  BatchCostPrior,
  ComputeDtype,
  ServingDefaults,
  SimModelParams,
} from "./model-serving.js";
export { SAMPLING_RANGES, samplingFromGenerationConfig } from "./sampling-defaults.js";
export type { SamplingDefaults } from "./sampling-defaults.js";
export { intInRange, parseIntSetting } from "./values.js";
export { adaptersDir, shoalHome, modelsDir } from "./paths.js";
