/**
 * The sidecar sent something outside docs/sidecar-protocol.md: a body that is not a MessagePack
 * map, a response without a usable `id`, or a response whose fields have the wrong shape.
 *
 * Raised instead of letting a `TypeError` escape from deep inside the worker, so a contract drift
 * between `sidecar-rs` and this client reads as what it is.
 */
export class SidecarProtocolError extends Error {
  override readonly name = "SidecarProtocolError";
}
