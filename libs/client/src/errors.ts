/**
 * An error answer from Shoal, in OpenAI's error shape: `status` is the HTTP status, `code`
 * Shoal's error kind (`invalid_argument`, `not_found`, `resource_exhausted`, …).
 */
export class ShoalError extends Error {
  override readonly name: string = "ShoalError";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    /** What the server said to wait before a retry, seconds (`Retry-After`). */
    readonly retryAfterSeconds: number | undefined,
    /** Attempts made, retries included. */
    readonly attempts: number,
  ) {
    super(message);
  }
}

/** 400: the request is wrong and retrying it will not help. */
export class InvalidRequestError extends ShoalError {
  override readonly name = "InvalidRequestError";
}

/** 401: no API key, or one that is not valid (unknown, revoked). */
export class AuthenticationError extends ShoalError {
  override readonly name = "AuthenticationError";
}

/** 403: the key's tenant has no grant for the model. */
export class PermissionDeniedError extends ShoalError {
  override readonly name = "PermissionDeniedError";
}

/** 404: the model is not served by this cluster. */
export class NotFoundError extends ShoalError {
  override readonly name = "NotFoundError";
}

/** 429: overloaded; retried after `Retry-After` until the client's retries are spent. */
export class RateLimitedError extends ShoalError {
  override readonly name = "RateLimitedError";
}

/** 503: part of the cluster is unreachable; retried like a 429. */
export class UnavailableError extends ShoalError {
  override readonly name = "UnavailableError";
}

/** The answer was not Shoal's (a proxy's HTML page, a truncated body). */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
}

/** The error class for a status. */
export function errorFor(
  status: number,
  message: string,
  code: string,
  retryAfterSeconds: number | undefined,
  attempts: number,
): ShoalError {
  const args = [message, status, code, retryAfterSeconds, attempts] as const;
  switch (status) {
    case 400:
    case 413:
      return new InvalidRequestError(...args);
    case 401:
      return new AuthenticationError(...args);
    case 403:
      return new PermissionDeniedError(...args);
    case 404:
      return new NotFoundError(...args);
    case 429:
      return new RateLimitedError(...args);
    case 503:
      return new UnavailableError(...args);
    default:
      return new ShoalError(...args);
  }
}
