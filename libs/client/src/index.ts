/**
 * `@shoal/client`: Shoal's REST API over MessagePack, with embeddings as Float32Array rows
 * and retries that follow the server's `Retry-After`.
 */
export { ShoalClient } from "./client.js";
export type { EmbedRequest, EmbedResult, ModelInfo, ShoalClientOptions } from "./client.js";
export {
  AuthenticationError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  ProtocolError,
  RateLimitedError,
  ShoalError,
  UnavailableError,
} from "./errors.js";
