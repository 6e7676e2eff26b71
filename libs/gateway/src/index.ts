/**
 * The ingress pipeline behind every protocol: validation, annotation, the pending-request
 * table answered from the reply subject, and the domain errors protocols translate.
 */
export { Gateway } from "./gateway.js";
export type { GatewayOptions } from "./gateway.js";
export type { EmbedCall, EmbedOutcome, RequestTimings } from "./embed.js";
export type { Submitted, TaskCall, WorkTask } from "./submission.js";
export type { AdapterResolver, ListedAdapter, ResolvedAdapter } from "./adapter-resolver.js";
export { ModelAccess } from "./access.js";
export type { TenantAccounting } from "./accounting.js";
export type { AccessMode, AdapterSharing } from "./access.js";
export { PublishedAdapters } from "./published-adapters.js";
export {
  AdapterNotFoundError,
  DeadlineExceededError,
  InternalError,
  InvalidArgumentError,
  ModelNotFoundError,
  OverloadedError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RequestError,
  UnauthenticatedRequestError,
  UnavailableError,
} from "./errors.js";
export type { BlobOffload, StoredBlob } from "./offload.js";
export { PendingRequests } from "./pending.js";
export { validateEmbed, validateTokenInputs } from "./validate.js";
export type { EmbedLimits } from "./validate.js";
export { DEFAULT_GENERATE_LIMITS, validateGenerate } from "./generate-call.js";
export type { ChatTurn, GenerateCall, GenerateLimits, GenerateTarget } from "./generate-call.js";
export { GenerationStream } from "./generation-stream.js";
export type { GenerationEvent, GenerationFinish } from "./generation-stream.js";
export { StreamGateway, streamSubject } from "./stream-gateway.js";
export type { StartedGeneration, StreamGatewayOptions } from "./stream-gateway.js";
export { DEFAULT_HEAD_LIMITS, extract, rerank } from "./heads.js";
export type {
  ExtractCall,
  ExtractedEntity,
  ExtractOutcome,
  HeadLimits,
  RerankCall,
  RerankOutcome,
} from "./heads.js";
export { ModelLoadingError, refuseUnlessResident } from "./no-wait.js";
