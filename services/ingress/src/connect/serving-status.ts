import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";

type Listener = (serving: boolean) => void;

/**
 * Whether ingress can serve: it needs its NATS connection (every request is queued and
 * answered through it) and must not be shutting down. Health checks report it; a load balancer
 * uses it to send new work elsewhere while NATS reconnects or the process drains.
 */
export class ServingStatus {
  #natsConnected = true;
  #shuttingDown = false;
  readonly #listeners = new Set<Listener>();

  get serving(): boolean {
    return this.#natsConnected && !this.#shuttingDown;
  }

  setNatsConnected(connected: boolean): void {
    this.#update(() => (this.#natsConnected = connected));
  }

  /** Final: once shutting down, ingress never serves again. */
  shutDown(): void {
    this.#update(() => (this.#shuttingDown = true));
  }

  /**
   * The status now, then each change, until `signal` aborts or shutdown has been reported;
   * ending at shutdown lets the server close instead of waiting out its grace period for
   * watchers that would otherwise never finish.
   */
  async *watch(signal: AbortSignal): AsyncGenerator<boolean> {
    const pending: boolean[] = [this.serving];
    let wake: (() => void) | undefined;
    const listener: Listener = (serving) => {
      pending.push(serving);
      wake?.();
    };
    const onAbort = (): void => wake?.();
    this.#listeners.add(listener);
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        const next = pending.shift();
        if (next !== undefined) {
          yield next;
        } else if (this.#shuttingDown) {
          return;
        } else {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      }
    } finally {
      this.#listeners.delete(listener);
      signal.removeEventListener("abort", onAbort);
    }
  }

  #update(change: () => void): void {
    const before = this.serving;
    change();
    const after = this.serving;
    if (after !== before) for (const listener of this.#listeners) listener(after);
  }
}

/**
 * Follows the connection's status events into `status` until the connection closes. nats.js
 * reconnects forever (`maxReconnectAttempts: -1`), so a disconnect is temporary and only
 * `reconnect` brings ingress back.
 */
export async function followNatsStatus(
  nc: NatsConnection,
  status: ServingStatus,
  logger: Logger,
): Promise<void> {
  for await (const event of nc.status()) {
    switch (event.type) {
      case "disconnect":
        logger.warn({ server: event.server }, "NATS disconnected; not serving until it reconnects");
        status.setNatsConnected(false);
        break;
      case "reconnect":
        logger.info({ server: event.server }, "NATS reconnected; serving");
        status.setNatsConnected(true);
        break;
      case "close":
        status.setNatsConnected(false);
        return;
      default:
        break;
    }
  }
}
