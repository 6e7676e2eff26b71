/**
 * LoRA adapters as versioned, tenant-owned artifacts: how requests name them
 * (`base:adapter@version`), the base model's shape they must fit, reading uploaded archives,
 * validating PEFT adapters, and storing them in JetStream.
 */
export {
  ADAPTER_NAME_PATTERN,
  checkAdapterName,
  checkAdapterVersion,
  formatAdapterReference,
  InvalidModelReferenceError,
  isAdapterName,
  parseModelReference,
} from "./reference.js";
export type { AdapterReference, ModelReference } from "./reference.js";
export {
  InvalidBaseModelError,
  readBaseShape,
  shapeFromGgufMetadata,
  shapeFromTransformersConfig,
} from "./base-shape.js";
export type { BaseShape } from "./base-shape.js";
export { InvalidGgufError, readGgufMetadata } from "./gguf-metadata.js";
export type { GgufLimits, GgufValue } from "./gguf-metadata.js";
export { ArchiveTooLargeError, InvalidArchiveError } from "./archive-error.js";
export { DEFAULT_TAR_LIMITS, readTar } from "./tar.js";
export type { TarFiles, TarLimits } from "./tar.js";
export { adapterFilesOf, readAdapterArchive } from "./adapter-archive.js";
export {
  isLoraTargetModule,
  LORA_DTYPES,
  LORA_TARGET_MODULES,
  loraModuleShape,
  loraTensorName,
} from "./lora-modules.js";
export type { LoraDtype, LoraTargetModule } from "./lora-modules.js";
export { CONFIG_FILE, InvalidAdapterError, validateLoraAdapter, WEIGHTS_FILE } from "./peft.js";
export type { AdapterFiles, AdapterSummary, LoraValidationOptions } from "./peft.js";
export { encodeFloats, makeLoraAdapter } from "./synthetic-adapter.js";
export type { SyntheticAdapterOptions } from "./synthetic-adapter.js";
export { AdapterStore } from "./store.js";
export type {
  AdapterBase,
  AdapterStoreOptions,
  PublishedAdapter,
  PublishRequest,
  RemoveOptions,
  SweepResult,
} from "./store.js";
export {
  ADAPTER_BUCKET,
  ADAPTER_FILES,
  ADAPTER_INDEX_BUCKET,
  adapterIndexKey,
  adapterObjectName,
  adapterObjectPrefix,
} from "./store-records.js";
export type { AdapterRecord, AdapterVersion, FileDigest } from "./store-records.js";
export { adapterWatch, type AdapterIndexChange, type AdapterWatch } from "./adapter-watch.js";
export {
  AdapterConflictError,
  AdapterIntegrityError,
  AdapterNotFoundError,
  AdapterOwnershipError,
  InvalidSharingError,
} from "./store-errors.js";
