import type { NatsConnection } from "@nats-io/transport-node";
import { WorkMessage } from "@shoal/jetstream";
import { LocalQueueUnavailableError, type LocalQueueClient } from "@shoal/local-queue";
import type { Logger } from "@shoal/telemetry";

export interface LocalHandOffOptions {
  readonly nc: NatsConnection;
  readonly client: LocalQueueClient;
  readonly modelKey: string;
  readonly logger: Logger;
}

/** Where put-back items went. */
export interface PutBackOutcome {
  /** Handed to the machine-local queue, for a worker on this host. */
  readonly local: number;
  /** NAKed to JetStream: the local queue was full or unavailable. */
  readonly naked: number;
}

/**
 * One model's side of the machine-local queue: puts back what this worker pulled but cannot run
 * now, and takes what co-located workers put back. It never loses an item: whatever the queue
 * does not accept is NAKed here, and a take that fails takes nothing.
 */
export class LocalHandOff {
  readonly #o: LocalHandOffOptions;

  constructor(options: LocalHandOffOptions) {
    this.#o = options;
  }

  /** Hands the messages to the local queue; NAKs those it refuses. */
  async putBack(messages: readonly WorkMessage[]): Promise<PutBackOutcome> {
    if (messages.length === 0) return { local: 0, naked: 0 };
    const parts = messages.map((m) => m.handOff());
    let accepted = 0;
    try {
      accepted = await this.#o.client.put(this.#o.modelKey, parts);
    } catch (err) {
      this.#log(err, "local queue put failed; putting back over JetStream");
    }
    // Settled by handOff: the refused ones are NAKed through fresh handles on the delivery.
    for (const p of parts.slice(accepted)) WorkMessage.fromParts(this.#o.nc, p).nak();
    return { local: accepted, naked: parts.length - accepted };
  }

  /**
   * Up to `max` items co-located workers put back, waiting up to `waitMs` when there are none.
   *
   * @throws LocalQueueUnavailableError when no queue answers; the caller then pulls from
   *   JetStream alone.
   */
  async take(max: number, waitMs: number, signal?: AbortSignal): Promise<WorkMessage[]> {
    let parts;
    try {
      parts = await this.#o.client.take(this.#o.modelKey, { max, waitMs, signal });
    } catch (err) {
      this.#log(err, "local queue take failed");
      throw err;
    }
    const messages: WorkMessage[] = [];
    for (const p of parts) {
      try {
        messages.push(WorkMessage.fromParts(this.#o.nc, p));
      } catch (err) {
        // Unreachable through a queue that validated the put; if it happens, JetStream still
        // redelivers the item after its ack wait.
        this.#o.logger.error(
          { err, subject: p.subject },
          "local queue item without an ack subject",
        );
      }
    }
    return messages;
  }

  #log(err: unknown, message: string): void {
    // An absent queue is expected (not started yet, restarting), so it is only worth a debug line.
    if (err instanceof LocalQueueUnavailableError) this.#o.logger.debug({ err }, message);
    else this.#o.logger.warn({ err }, message);
  }
}
