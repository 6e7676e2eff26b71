import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";
import { DeadlineExceededError, OverloadedError } from "./errors.js";

/** Where a request's time limit comes from: the client's, else the gateway's default. */
export interface TimeoutPolicy {
  /** @default 30000 */
  readonly defaultTimeoutMs?: number;
  /** Longest deadline a client may ask for. @default 300000 */
  readonly maxTimeoutMs?: number;
}

/**
 * The time a request gets, whole ms: what the client asked for (or the default), clamped to the
 * most the gateway allows. Deadlines travel as whole milliseconds, and a client's may come in
 * finer units (gRPC's `grpc-timeout` in µs or ns), so it is rounded down, never extended.
 *
 * @throws DeadlineExceededError when the client's deadline has already passed.
 */
export function requestTimeoutMs(asked: number | undefined, policy: TimeoutPolicy): number {
  const timeoutMs = Math.floor(
    Math.min(asked ?? policy.defaultTimeoutMs ?? 30_000, policy.maxTimeoutMs ?? 300_000),
  );
  if (timeoutMs <= 0) throw new DeadlineExceededError("deadline already passed");
  return timeoutMs;
}

/**
 * Refuses a new request while this ingress already holds `max` of `what`: past that, queueing
 * more only makes every client wait longer.
 *
 * @throws OverloadedError with a one-second retry hint.
 */
export function admit(held: number, max: number, what: string): void {
  if (held >= max) throw new OverloadedError(`ingress holds ${max} ${what}; retry shortly`, 1);
}

/**
 * Subscribes `onData` to this ingress's own answer subject and waits until the server has the
 * subscription, so no answer to a request queued afterwards can arrive unheard.
 */
export async function subscribeAnswers(
  nc: NatsConnection,
  subject: string,
  logger: Logger,
  onData: (data: Uint8Array) => void,
): Promise<Subscription> {
  const subscription = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err !== null) {
        logger.error({ err, subject }, "answer subscription failed");
        return;
      }
      onData(msg.data);
    },
  });
  await nc.flush();
  return subscription;
}
