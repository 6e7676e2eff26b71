export { freePort } from "./free-port.js";
export { scrapeMetrics } from "./metrics-scrape.js";
export { sidecarPidOf } from "./sidecar-pid.js";
export { ManagedProcess, type ProcessExit } from "./managed-process.js";
export { MissingPrerequisiteError } from "./missing-prerequisite-error.js";
export type { NatsRestartOptions, NatsServerHandle, NatsServerOptions } from "./nats-server.js";
export { startNatsServer } from "./nats-server.js";
export type { S3ServerHandle } from "./s3-server.js";
export { startS3Server } from "./s3-server.js";
export type { JaegerHandle } from "./jaeger.js";
export { startJaeger } from "./jaeger.js";
export {
  chromiumBinary,
  jaegerBinary,
  llamaPython,
  minilmDir,
  natsServerBinary,
  repoRoot,
  s3ServerBinary,
  shoalHome,
  sidecarBinary,
  smollm2Dir,
  smollm2Gguf,
} from "./paths.js";
export type { LlamaServerHandle, LlamaServerOptions } from "./llama-server.js";
export { startLlamaServer } from "./llama-server.js";
export type { SidecarHandle, SidecarOptions } from "./sidecar.js";
export { startSidecar } from "./sidecar.js";
export { tempDir } from "./temp-dir.js";
export type { TarArchiveOptions, TarEntrySpec } from "./tar-archive.js";
export { paxRecord, tarArchive, tarHeader } from "./tar-archive.js";
export type { CollectedSpan, OtlpCollector } from "./otlp-collector.js";
export { startOtlpCollector } from "./otlp-collector.js";
export type { ServiceHandle, ServiceOptions } from "./service-process.js";
export { startService } from "./service-process.js";
export {
  defaultCatalog,
  minilmCatalog,
  simEmbeddingEntry,
  SMOLLM2,
  SMOLLM2_SHAPE,
  smollm2Catalog,
  smollm2CatalogDocument,
  TINY,
  tinyHeadsCatalog,
  tinyHeadsCatalogDocument,
} from "./catalog.js";
export type { SimCost } from "./catalog.js";
