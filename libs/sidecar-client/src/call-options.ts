/**
 * Per-call options every method of the client accepts. Its own file because every request
 * type (embed, heads, generation) extends it and the client imports them all: kept in the
 * client, it made each of those files and the client import each other.
 */
export interface CallOptions {
  /**
   * W3C trace context of the caller's span; the sidecar makes its span for this request a child
   * of it, so the request's trace continues across the socket.
   */
  readonly traceparent?: string;
  /** Overrides the client's `requestTimeoutMs` for this call. */
  readonly timeoutMs?: number;
}
