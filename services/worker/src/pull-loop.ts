import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";

/**
 * Runs one pull cycle after another until `stopping()` says so. A failed cycle (the server
 * restarting, a sidecar being replaced) is logged and retried after a short pause; only a
 * stop or a closed connection ends the loop.
 */
export async function pullUntilStopped(
  cycle: () => Promise<void>,
  stopping: () => boolean,
  nc: NatsConnection,
  log: { readonly logger: Logger; readonly model: string; readonly what: string },
): Promise<void> {
  while (!stopping()) {
    try {
      await cycle();
    } catch (err) {
      if (stopping() || nc.isClosed()) break;
      log.logger.warn({ err, model: log.model }, `${log.what} failed; retrying`);
      await sleep(250);
    }
  }
}
