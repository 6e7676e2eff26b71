import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";

export interface LocalQueueServerOptions {
  /** Unix socket the co-located workers connect to. */
  readonly socketPath: string;
  /** The connection held items are kept alive and handed back to JetStream through. */
  readonly nc: NatsConnection;
  readonly logger: Logger;
  /**
   * How long an item waits for a local worker to take it before it goes back to JetStream
   * (NAK), where a worker on another host can have it. Idle local workers take at once, so an
   * item still here is waiting for a busy one; well under a batch time, so it never waits a
   * whole batch on this host while another host may be idle. @default 100
   */
  readonly holdMs?: number;
  /** Most items held at once, across models. @default 4096 */
  readonly maxItems?: number;
  /** Most payload bytes held at once, across models. @default 256 MiB */
  readonly maxBytes?: number;
  /**
   * How often held items tell JetStream they are still being worked on, so an item held longer
   * than its consumer's ack wait is not redelivered meanwhile. Keep it under a third of the ack
   * wait. @default 10000
   */
  readonly progressIntervalMs?: number;
  /** Longest frame accepted; a longer length prefix closes the connection. @default 64 MiB */
  readonly maxFrameBytes?: number;
}

export type CompiledLocalQueueServerOptions = Required<LocalQueueServerOptions>;

/**
 * Validates the options once and fills defaults.
 *
 * @throws RangeError naming the first value that is not a positive integer.
 */
export function compileLocalQueueServerOptions(
  options: LocalQueueServerOptions,
): CompiledLocalQueueServerOptions {
  if (options.socketPath.length === 0) throw new RangeError("local queue: socketPath is empty");
  return {
    ...options,
    holdMs: positive("holdMs", options.holdMs ?? 100),
    maxItems: positive("maxItems", options.maxItems ?? 4096),
    maxBytes: positive("maxBytes", options.maxBytes ?? 256 * 1024 ** 2),
    progressIntervalMs: positive("progressIntervalMs", options.progressIntervalMs ?? 10_000),
    maxFrameBytes: positive("maxFrameBytes", options.maxFrameBytes ?? 64 * 1024 ** 2),
  };
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`local queue: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
