/** No such adapter, or no such version of it; the message is safe to show the caller. */
export class AdapterNotFoundError extends Error {
  override readonly name = "AdapterNotFoundError";
}

/** The adapter belongs to another tenant; the message is safe to show the caller. */
export class AdapterOwnershipError extends Error {
  override readonly name = "AdapterOwnershipError";
}

/**
 * The index entry kept changing under a compare-and-set for longer than the attempts allow
 * (many writers on one adapter at once); retrying later is safe.
 */
export class AdapterConflictError extends Error {
  override readonly name = "AdapterConflictError";
}

/** Stored adapter files that are missing or differ from what the index recorded. */
export class AdapterIntegrityError extends Error {
  override readonly name = "AdapterIntegrityError";
}

/** A sharing list naming something that cannot be a tenant; the message is safe to show. */
export class InvalidSharingError extends Error {
  override readonly name = "InvalidSharingError";
}
