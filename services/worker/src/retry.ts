import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { Headers, retrySubject, type WorkMessage } from "@shoal/jetstream";
import type { Logger } from "@shoal/telemetry";

/**
 * Attempts an item has had, counting this one: the failed attempts its header records plus one.
 *
 * JetStream's delivery count cannot serve here: it also counts put-backs (an over-pulled item
 * NAKed unrun, which is the normal case past a cluster's knee) and redeliveries after a
 * worker died. Only a failed attempt uses up one of an item's tries; the item's deadline bounds
 * the rest.
 */
export function attemptOf(msg: WorkMessage): number {
  const raw = msg.headers?.get(Headers.failedAttempts) ?? "";
  const failed = /^\d{1,6}$/.test(raw) ? Number(raw) : 0;
  return failed + 1;
}

/**
 * Sends an item whose attempt failed back for another: a copy with the failed attempts counted
 * goes into the work stream, under the retry subject of its work subject, (JetStream confirms it stored the copy) and only then is the
 * original acked, so the item is never lost and never twice in the queue. The copy's dedupe key
 * names the attempt, so a copy published twice (a worker dying between the publish and the
 * ack) is stored once. Should the publish fail, the original is NAKed and comes back anyway.
 */
export async function retryLater(
  js: JetStreamClient,
  msg: WorkMessage,
  logger: Logger,
): Promise<void> {
  const failed = attemptOf(msg);
  const hdrs = natsHeaders();
  if (msg.headers !== undefined) {
    for (const [name, values] of msg.headers) {
      if (name === Headers.msgId || name === Headers.failedAttempts) continue;
      for (const v of values) hdrs.append(name, v);
    }
  }
  hdrs.set(Headers.failedAttempts, String(failed));
  const original = msg.headers?.get(Headers.msgId) ?? `seq-${msg.streamSequence}`;
  try {
    await js.publish(retrySubject(msg.subject), msg.data, {
      headers: hdrs,
      msgID: `${original}:retry-${failed}`,
    });
    msg.ack();
  } catch (err) {
    logger.warn({ err, seq: msg.streamSequence }, "retry publish failed; NAKing instead");
    msg.nak(200);
  }
}
