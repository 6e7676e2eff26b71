/**
 * The registry's own request errors. Library errors (`@shoal/adapters`, model sources) pass
 * through unchanged; `error-table.ts` maps both to HTTP statuses in one place.
 */

/** No API key, or one that is not valid (unknown, revoked, malformed). */
export class UnauthenticatedError extends Error {
  override readonly name = "UnauthenticatedError";
}

/** A valid key whose tenant has no grant for what it asked (a base model). */
export class ForbiddenError extends Error {
  override readonly name = "ForbiddenError";
}

/** The URL names no route, or no catalog model. */
export class NotFoundError extends Error {
  override readonly name = "NotFoundError";
}

/** A route that exists, asked with a method it does not take. */
export class MethodNotAllowedError extends Error {
  override readonly name = "MethodNotAllowedError";

  constructor(readonly allow: readonly string[]) {
    super(`this path takes ${allow.join(", ")}`);
  }
}

/** The request is malformed in a way not covered by a library error (URL, version, base). */
export class BadRequestError extends Error {
  override readonly name = "BadRequestError";
}

/** A body over the upload limit, refused by its declared length or cut off while streaming. */
export class PayloadTooLargeError extends Error {
  override readonly name = "PayloadTooLargeError";
}

/** A body that is evidently not an archive (JSON, a multipart form). */
export class UnsupportedMediaTypeError extends Error {
  override readonly name = "UnsupportedMediaTypeError";
}

/** The upload stopped sending for longer than the idle timeout. */
export class UploadIdleError extends Error {
  override readonly name = "UploadIdleError";
}

/**
 * The registry cannot take the request now (uploads at their bound, shutting down, NATS or the
 * base model unreachable); the client should retry after `retryAfterSeconds`.
 */
export class UnavailableError extends Error {
  override readonly name = "UnavailableError";

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
