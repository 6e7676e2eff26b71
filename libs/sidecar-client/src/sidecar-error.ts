/**
 * The error codes of docs/sidecar-protocol.md. Kept as a closed list because the protocol and
 * this client change in the same commit; a code outside it is a protocol violation.
 */
export const SIDECAR_ERROR_CODES = [
  "bad_frame",
  "frame_too_large",
  "unknown_op",
  "bad_request",
  "model_not_found",
  "model_exists",
  "load_failed",
  "adapter_not_found",
  "adapter_exists",
  "input_too_long",
  "internal",
] as const;

/** One of the sidecar's error codes; see {@link SIDECAR_ERROR_CODES}. */
export type SidecarErrorCode = (typeof SIDECAR_ERROR_CODES)[number];

const codes: ReadonlySet<string> = new Set(SIDECAR_ERROR_CODES);

/** Whether `value` is one of the protocol's error codes. */
export function isSidecarErrorCode(value: unknown): value is SidecarErrorCode {
  return typeof value === "string" && codes.has(value);
}

/**
 * The sidecar answered a request with `ok: false`. The request reached the sidecar and was
 * refused, so the connection is fine and retrying the same request will fail the same way
 * (except `internal`); the worker maps `code` to a client-facing status in one place.
 */
export class SidecarError extends Error {
  override readonly name = "SidecarError";

  constructor(
    /** The protocol's error code. */
    readonly code: SidecarErrorCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}
