import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectNats, drainOrClose, type NatsAuth, type ReadinessSink } from "@shoal/jetstream";
import { LocalQueueServer, type LocalQueueServerOptions } from "@shoal/local-queue";
import type { Logger } from "@shoal/telemetry";

export interface LocalQueueServiceOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  /** @default `<tmpdir>/shoal-local-queue.sock` */
  readonly socketPath?: string;
  readonly holdMs?: LocalQueueServerOptions["holdMs"];
  readonly maxItems?: LocalQueueServerOptions["maxItems"];
  readonly maxBytes?: LocalQueueServerOptions["maxBytes"];
  readonly progressIntervalMs?: LocalQueueServerOptions["progressIntervalMs"];
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
}

export interface RunningLocalQueue {
  readonly socketPath: string;
  /** Returns every held item to JetStream, closes the socket, drains NATS. */
  stop(): Promise<void>;
}

/** The default socket, the same for the queue and the workers of a host. */
export function defaultLocalQueueSocket(): string {
  return join(tmpdir(), "shoal-local-queue.sock");
}

/**
 * One per multi-accelerator host: the queue its workers hand over-pulled work through (see
 * `libs/local-queue`). It needs NATS only to keep held items alive and to return them.
 */
export async function run(options: LocalQueueServiceOptions): Promise<RunningLocalQueue> {
  const nc = await connectNats(
    options.natsServers,
    "shoal-local-queue",
    options.natsAuth,
    options.readiness,
  );
  const socketPath = options.socketPath ?? defaultLocalQueueSocket();
  const server = await LocalQueueServer.listen({
    socketPath,
    nc,
    holdMs: options.holdMs,
    maxItems: options.maxItems,
    maxBytes: options.maxBytes,
    progressIntervalMs: options.progressIntervalMs,
    logger: options.logger,
  });
  options.logger.info({ socket: socketPath }, "local queue listening");
  return {
    socketPath,
    async stop() {
      await server.close();
      options.logger.info(server.stats(), "local queue stopped");
      await drainOrClose(nc);
    },
  };
}
