/**
 * What can go wrong with a request, in domain terms. Ingress translates these to gRPC/Connect
 * codes and HTTP statuses in exactly one table; messages here are safe to show to clients,
 * causes are only logged.
 */
export abstract class RequestError extends Error {
  abstract readonly kind:
    | "invalid_argument"
    | "not_found"
    | "unauthenticated"
    | "permission_denied"
    | "deadline_exceeded"
    | "resource_exhausted"
    | "payload_too_large"
    | "unavailable"
    | "internal";
}

export class InvalidArgumentError extends RequestError {
  override readonly name = "InvalidArgumentError";
  readonly kind = "invalid_argument";
}

export class ModelNotFoundError extends RequestError {
  override readonly name = "ModelNotFoundError";
  readonly kind = "not_found";
  constructor(
    readonly model: string,
    readonly available: readonly string[],
  ) {
    super(`model "${model}" is not served here; available: ${available.join(", ")}`);
  }
}

/** A request names an adapter its base model does not have (or no longer has). */
export class AdapterNotFoundError extends RequestError {
  override readonly name = "AdapterNotFoundError";
  readonly kind = "not_found";
  constructor(readonly model: string) {
    super(`adapter "${model}" is not published; GET /v1/models lists the adapters there are`);
  }
}

/** No API key, or one that is not valid (unknown, revoked, malformed). */
export class UnauthenticatedRequestError extends RequestError {
  override readonly name = "UnauthenticatedRequestError";
  readonly kind = "unauthenticated";
}

/** A valid key whose tenant has no grant for what the request names. */
export class PermissionDeniedError extends RequestError {
  override readonly name = "PermissionDeniedError";
  readonly kind = "permission_denied";
  constructor(
    message: string,
    /** Who was refused, for the audit line. */
    readonly tenant: string,
    readonly keyPrefix: string,
    /** What it asked for: a model id. */
    readonly target: string,
  ) {
    super(message);
  }
}

export class DeadlineExceededError extends RequestError {
  override readonly name = "DeadlineExceededError";
  readonly kind = "deadline_exceeded";
}

export class OverloadedError extends RequestError {
  override readonly name = "OverloadedError";
  readonly kind = "resource_exhausted";
  constructor(
    message: string,
    /** When a retry has a fair chance, in seconds (`Retry-After`). */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class UnavailableError extends RequestError {
  override readonly name = "UnavailableError";
  readonly kind = "unavailable";
}

export class InternalError extends RequestError {
  override readonly name = "InternalError";
  readonly kind = "internal";
}

export class PayloadTooLargeError extends RequestError {
  override readonly name = "PayloadTooLargeError";
  readonly kind = "payload_too_large";
  constructor(readonly limitBytes: number) {
    super(`request body is larger than the ${limitBytes}-byte limit`);
  }
}
