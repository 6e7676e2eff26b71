/**
 * No response arrived within the request's timeout. The connection stays open and other
 * requests are unaffected; a late response for this request is discarded when it arrives.
 */
export class SidecarTimeoutError extends Error {
  override readonly name = "SidecarTimeoutError";

  constructor(
    /** The operation that timed out. */
    readonly op: string,
    /** The timeout that elapsed, in milliseconds. */
    readonly timeoutMs: number,
  ) {
    super(`sidecar did not answer ${op} within ${timeoutMs} ms`);
  }
}
