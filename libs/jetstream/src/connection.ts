import { connect, type NatsConnection } from "@nats-io/transport-node";

/**
 * Connects a Shoal process to NATS. It reconnects forever: a NATS restart must not take a
 * worker or ingress down with it, and JetStream holds the work meanwhile.
 */
export function connectNats(
  servers: string | readonly string[],
  name: string,
): Promise<NatsConnection> {
  return connect({
    servers: typeof servers === "string" ? servers : [...servers],
    name,
    maxReconnectAttempts: -1,
  });
}

/**
 * Drains a connection (flushes what it publishes, lets subscriptions finish) on shutdown, and
 * closes it outright when draining cannot work because the server is already gone.
 */
export async function drainOrClose(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) return;
  try {
    await nc.drain();
  } catch {
    await nc.close();
  }
}
