import type { Msg, MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { connectionInbox } from "./connection.js";
import { Headers } from "./headers.js";

/** What JetStream answered for a stored message. */
export interface PubAck {
  readonly stream: string;
  readonly seq: number;
  /** True when the message id was already stored within the duplicate window. */
  readonly duplicate: boolean;
}

/** JetStream refused to store a message; `description` is the server's reason. */
export class PublishRefusedError extends Error {
  override readonly name = "PublishRefusedError";

  constructor(
    readonly description: string,
    readonly errCode: number,
  ) {
    super(`JetStream refused the message: ${description}`);
  }

  /** The stream is at its byte or message limit and discards new messages. */
  get streamFull(): boolean {
    return /maximum (bytes|messages)/i.test(this.description);
  }
}

/** No stream listens on the subject (or the server is not there to say so). */
export class NoStreamError extends Error {
  override readonly name = "NoStreamError";
}

/** JetStream did not acknowledge in time; the message may or may not be stored. */
export class PublishTimeoutError extends Error {
  override readonly name = "PublishTimeoutError";
}

export interface StreamPublisherOptions {
  /** How long to wait for JetStream's acknowledgement. @default 5000 */
  readonly timeoutMs?: number;
  /**
   * How long a publish that timed out or found no stream is tried again, with the same message
   * id so that it is stored once: the few seconds a NATS cluster takes to elect a new leader
   * for the stream, or a server to restart, then cost a caller latency instead of an error.
   * @default 10_000
   */
  readonly retryForMs?: number;
}

interface Waiting {
  readonly resolve: (ack: PubAck) => void;
  readonly reject: (err: Error) => void;
  readonly deadline: number;
}

/** How often unanswered publishes are checked against their deadlines. */
const SWEEP_MS = 100;

const utf8 = new TextDecoder();

/**
 * Publishes into JetStream and awaits each acknowledgement on one shared inbox subscription.
 * The client library's `publish` goes through `request`, which subscribes per call and builds
 * two `Error` objects (stack traces included) per message in case it fails: on the gateway's
 * hot path that was the largest single cost after the HTTP server itself. Here a publish is one
 * core-NATS message with a reply subject, a map entry and a JSON parse of the ack; deadlines
 * are swept by one timer instead of one per message.
 */
export class StreamPublisher {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;
  readonly #retryForMs: number;
  readonly #prefix: string;
  readonly #waiting = new Map<string, Waiting>();
  readonly #sub: Subscription;
  readonly #sweep: NodeJS.Timeout;
  #next = 0;
  #closed = false;

  constructor(nc: NatsConnection, options: StreamPublisherOptions = {}) {
    this.#nc = nc;
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#retryForMs = options.retryForMs ?? 10_000;
    this.#prefix = `${connectionInbox(nc)}.`;
    this.#sub = nc.subscribe(`${this.#prefix}*`, {
      callback: (err, msg) => {
        if (err === null) this.#settle(msg);
      },
    });
    this.#sweep = setInterval(() => {
      this.#expire();
    }, SWEEP_MS);
    this.#sweep.unref();
  }

  /**
   * Stores `data` on `subject`; `msgId` makes a retried publish idempotent within the
   * stream's duplicate window.
   */
  publish(subject: string, data: Uint8Array, msgId: string, headers: MsgHdrs): Promise<PubAck> {
    headers.set(Headers.msgId, msgId);
    // The retry path costs only when a publish fails: this is the gateway's hot path.
    return this.#publishOnce(subject, data, headers).catch((err: unknown) =>
      this.#retry(subject, data, headers, err, Date.now() + this.#retryForMs),
    );
  }

  async #retry(
    subject: string,
    data: Uint8Array,
    headers: MsgHdrs,
    first: unknown,
    giveUpAt: number,
  ): Promise<PubAck> {
    let err = first;
    for (let attempt = 0; ; attempt++) {
      const retriable = err instanceof PublishTimeoutError || err instanceof NoStreamError;
      if (!retriable || this.#closed || Date.now() >= giveUpAt) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      try {
        return await this.#publishOnce(subject, data, headers);
      } catch (next) {
        err = next;
      }
    }
  }

  #publishOnce(subject: string, data: Uint8Array, headers: MsgHdrs): Promise<PubAck> {
    const token = (this.#next++).toString(36);
    return new Promise<PubAck>((resolve, reject) => {
      this.#waiting.set(token, { resolve, reject, deadline: Date.now() + this.#timeoutMs });
      try {
        this.#nc.publish(subject, data, { reply: this.#prefix + token, headers });
      } catch (err) {
        this.#waiting.delete(token);
        reject(err as Error);
      }
    });
  }

  /** Stops listening; publishes still waiting fail. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#sub.unsubscribe();
    for (const w of this.#waiting.values()) w.reject(new NoStreamError("publisher closed"));
    this.#waiting.clear();
  }

  #settle(msg: Msg): void {
    const token = msg.subject.slice(this.#prefix.length);
    const waiting = this.#waiting.get(token);
    if (waiting === undefined) return;
    this.#waiting.delete(token);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      waiting.reject(new NoStreamError(`no stream takes messages on this subject`));
      return;
    }
    let ack: {
      stream?: string;
      seq?: number;
      duplicate?: boolean;
      error?: { description?: string; err_code?: number };
    };
    try {
      ack = JSON.parse(utf8.decode(msg.data)) as typeof ack;
    } catch {
      waiting.reject(new PublishRefusedError("unreadable acknowledgement", 0));
      return;
    }
    if (ack.error !== undefined) {
      waiting.reject(
        new PublishRefusedError(ack.error.description ?? "unknown", ack.error.err_code ?? 0),
      );
      return;
    }
    waiting.resolve({
      stream: ack.stream ?? "",
      seq: ack.seq ?? 0,
      duplicate: ack.duplicate === true,
    });
  }

  #expire(): void {
    const now = Date.now();
    for (const [token, w] of this.#waiting) {
      if (w.deadline > now) continue;
      this.#waiting.delete(token);
      w.reject(new PublishTimeoutError(`no acknowledgement within ${this.#timeoutMs} ms`));
    }
  }
}
