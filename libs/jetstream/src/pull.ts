import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { connectionInbox } from "./connection.js";
import { WorkMessage } from "./work-message.js";

export interface PullRequest {
  /** Most messages to take. */
  readonly batch: number;
  /**
   * How long the server may hold the request open waiting for the first messages. Omit for
   * `no_wait`: take only what is queued right now, which is how a worker tops up a batch
   * without pulling work it cannot start at once.
   */
  readonly expiresMs?: number;
}

/**
 * One raw JetStream pull (`$JS.API.CONSUMER.MSG.NEXT`). The client libraries' fetch cannot
 * express "only what is already queued" and holds requests open for at least a second, while a
 * batch former needs exactly that to avoid over-pulling; the API itself supports it.
 *
 * Resolves when `batch` messages arrived, or the server ended the request with a status
 * (404 no messages, 408 expired, 409 limits), or `expiresMs` plus a grace period passed.
 */
export async function pull(
  nc: NatsConnection,
  stream: string,
  consumer: string,
  request: PullRequest,
): Promise<WorkMessage[]> {
  // Under the connection's own inbox prefix: its NATS user may subscribe to nothing else.
  const inbox = connectionInbox(nc);
  const messages: WorkMessage[] = [];
  const sub = nc.subscribe(inbox, { max: request.batch + 1 });
  const body =
    request.expiresMs === undefined
      ? { batch: request.batch, no_wait: true }
      : { batch: request.batch, expires: request.expiresMs * 1e6 };
  const guardMs = (request.expiresMs ?? 0) + 2_000;
  // Drained, not dropped: when the process was stalled (CPU starved, paused), this timer can
  // fire before the messages the server delivered meanwhile are read from the socket; a drain
  // still hands them over, where an unsubscribe would leave them unacked until the ack wait.
  // A drain waits for the server's answer, so a server that is away ends it by unsubscribing.
  let hardStop: NodeJS.Timeout | undefined;
  const guard = setTimeout(() => {
    hardStop = setTimeout(() => {
      sub.unsubscribe();
    }, DRAIN_MS);
    sub.drain().catch(() => {
      sub.unsubscribe();
    });
  }, guardMs);
  try {
    nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify(body), {
      reply: inbox,
    });
    for await (const msg of sub) {
      if (isStatus(msg)) break;
      messages.push(new WorkMessage(nc, msg));
      if (messages.length >= request.batch) break;
    }
  } finally {
    clearTimeout(guard);
    clearTimeout(hardStop);
    sub.unsubscribe();
  }
  return messages;
}

/** Longest a pull's guard waits for its drain before dropping the subscription. */
const DRAIN_MS = 2_000;

/** Status messages (no payload, a `Status` header) end a pull; heartbeats (100) do not occur. */
function isStatus(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers !== undefined && msg.headers.code > 0;
}
