/**
 * The ingress pipeline behind every protocol: validation, annotation, the pending-request
 * table answered from the reply subject, and the domain errors protocols translate.
 */
export { Gateway } from "./gateway.js";
export type { EmbedCall, EmbedOutcome, GatewayOptions, RequestTimings } from "./gateway.js";
export {
  DeadlineExceededError,
  InternalError,
  InvalidArgumentError,
  ModelNotFoundError,
  OverloadedError,
  PayloadTooLargeError,
  RequestError,
  UnavailableError,
} from "./errors.js";
export { PendingRequests } from "./pending.js";
export { validateEmbed } from "./validate.js";
export type { EmbedLimits } from "./validate.js";
