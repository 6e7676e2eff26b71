/**
 * No local queue answers on the socket, or the connection closed with requests in flight. The
 * worker then puts work back over the network (NAK) and pulls from JetStream only: the local
 * queue is an optimisation, never a place work depends on.
 */
export class LocalQueueUnavailableError extends Error {
  override readonly name = "LocalQueueUnavailableError";
}
