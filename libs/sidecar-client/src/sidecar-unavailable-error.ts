/**
 * The connection to the sidecar is gone (or never came up): it closed, failed, or was closed by
 * {@link SidecarClient.close}. Every request in flight on it fails with this error at once,
 * because its answer can no longer arrive; the work itself may be retried on a new connection.
 */
export class SidecarUnavailableError extends Error {
  override readonly name = "SidecarUnavailableError";
}
