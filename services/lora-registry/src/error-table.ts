import {
  AdapterConflictError,
  AdapterNotFoundError,
  AdapterOwnershipError,
  ArchiveTooLargeError,
  InvalidSharingError,
  InvalidAdapterError,
  InvalidArchiveError,
  InvalidModelReferenceError,
} from "@shoal/adapters";
import {
  BadRequestError,
  ForbiddenError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  UnauthenticatedError,
  UnavailableError,
  UnsupportedMediaTypeError,
  UploadIdleError,
} from "./errors.js";

/** How one error is answered. */
export interface HttpError {
  readonly status: number;
  /** Stable, machine-readable; `error.code` in the body. */
  readonly code: string;
  /** Client-safe: the error's own message for known errors, a generic one otherwise. */
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
}

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The one place errors become HTTP statuses. Order matters where classes inherit: the
 * too-large archive before the invalid one.
 */
const TABLE: readonly (readonly [ErrorClass, number, string])[] = [
  [UnauthenticatedError, 401, "unauthenticated"],
  [ForbiddenError, 403, "forbidden"],
  // Only a race with another tenant's upload of the same name gets here.
  [AdapterOwnershipError, 409, "conflict"],
  [InvalidSharingError, 400, "bad_request"],
  [NotFoundError, 404, "not_found"],
  [AdapterNotFoundError, 404, "not_found"],
  [MethodNotAllowedError, 405, "method_not_allowed"],
  [UploadIdleError, 408, "upload_timeout"],
  [AdapterConflictError, 409, "conflict"],
  [PayloadTooLargeError, 413, "too_large"],
  [ArchiveTooLargeError, 413, "too_large"],
  [UnsupportedMediaTypeError, 415, "unsupported_media_type"],
  [InvalidArchiveError, 400, "invalid_archive"],
  [InvalidAdapterError, 400, "invalid_adapter"],
  [InvalidModelReferenceError, 400, "invalid_name"],
  [BadRequestError, 400, "bad_request"],
  [UnavailableError, 503, "unavailable"],
];

/**
 * The answer for any thrown value. Unknown errors (NATS failures, a full store, bugs) are 503
 * or 500 with a generic message: their causes are logged, never sent.
 */
export function toHttpError(error: unknown): HttpError {
  for (const [type, status, code] of TABLE) {
    if (error instanceof type) {
      return { status, code, message: error.message, headers: headersFor(error) };
    }
  }
  return {
    status: 500,
    code: "internal",
    message: "internal error; the registry logged the cause",
    headers: {},
  };
}

function headersFor(error: Error): Record<string, string> {
  if (error instanceof UnauthenticatedError) return { "www-authenticate": 'Bearer realm="shoal"' };
  if (error instanceof MethodNotAllowedError) return { allow: error.allow.join(", ") };
  if (error instanceof UnavailableError) return { "retry-after": String(error.retryAfterSeconds) };
  return {};
}
