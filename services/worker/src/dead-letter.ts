import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { Headers, deadLetterSubject, type WorkMessage } from "@shoal/jetstream";
import type { Logger } from "@shoal/telemetry";
import { attemptOf } from "./retry.js";

/**
 * Keeps an item the worker gives up on in the dead-letter stream, bytes unchanged, with why,
 * how many attempts it had and where it came from; then removes it from the work queue.
 * Should the dead-letter stream refuse it, the item is still removed (the reason is logged):
 * a poison item must not circulate either way.
 */
export async function deadLetter(
  js: JetStreamClient,
  modelKey: string,
  msg: WorkMessage,
  reason: string,
  logger: Logger,
  attempts: number = attemptOf(msg),
): Promise<void> {
  const hdrs = natsHeaders();
  hdrs.set(Headers.deadReason, reason);
  hdrs.set(Headers.deadDeliveries, String(attempts));
  hdrs.set(Headers.deadSubject, msg.subject);
  // A message may carry several requests: every id is kept.
  for (const id of msg.headers?.values(Headers.requestId) ?? []) {
    if (id !== "") hdrs.append(Headers.requestId, id);
  }
  try {
    await js.publish(deadLetterSubject(modelKey), msg.data, { headers: hdrs });
  } catch (err) {
    logger.error({ err, seq: msg.streamSequence, reason }, "dead-letter publish failed");
  }
  msg.term(reason);
}
