export type { CallOptions } from "./call-options.js";
export type {
  EmbedRequest,
  GgufWeights,
  LoadBackend,
  LoadOptions,
  OpenAiLoadOptions,
  SimLoadOptions,
} from "./client.js";
export { SidecarClient } from "./client.js";
export { toFloat32Array } from "./float32.js";
export type {
  ChatTurn,
  FinishReason,
  GenerateRequest,
  GeneratedTokens,
  GenerationDone,
} from "./generation.js";
export { Generation } from "./generation.js";
export type {
  ClassifyResult,
  ExtractedEntity,
  ExtractResult,
  HeadAccounting,
  ScoreRequest,
  ScoreResult,
  TextsRequest,
} from "./heads.js";
export type { FrameBody, FrameDecoderOptions } from "./frame.js";
export { DEFAULT_MAX_FRAME_BYTES, encodeFrame, FRAME_HEADER_BYTES, FrameDecoder } from "./frame.js";
export { FrameTooLargeError } from "./frame-too-large-error.js";
export type { CompiledSidecarClientOptions, SidecarClientOptions } from "./options.js";
export { compileSidecarClientOptions, DEFAULT_SIDECAR_CLIENT_OPTIONS } from "./options.js";
export type {
  AdapterLoadResult,
  AdapterStats,
  EmbedResult,
  HealthResult,
  LoadResult,
  ModelFamily,
  ModelStats,
  SidecarBackend,
  StatsResult,
  UnloadResult,
} from "./responses.js";
export type { SidecarErrorCode } from "./sidecar-error.js";
export { isSidecarErrorCode, SIDECAR_ERROR_CODES, SidecarError } from "./sidecar-error.js";
export { SidecarProtocolError } from "./sidecar-protocol-error.js";
export { SidecarTimeoutError } from "./sidecar-timeout-error.js";
export { SidecarUnavailableError } from "./sidecar-unavailable-error.js";
