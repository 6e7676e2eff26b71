import {
  headers as createHeaders,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node";

/**
 * A pulled message as plain data: what a worker hands to the machine-local queue and another
 * worker on the host rebuilds the message from. JetStream accepts an ack, NAK or in-progress
 * for a delivery from any connection that publishes to its `reply` subject, so whoever holds
 * these parts holds the item.
 */
export interface WorkMessageParts {
  readonly subject: string;
  /** The delivery's ack subject (`$JS.ACK.…`). */
  readonly reply: string;
  /** Header name and value pairs, in order; a name repeats for a multi-valued header. */
  readonly headers: readonly (readonly [string, string])[];
  readonly data: Uint8Array;
}

/** The fields of a NATS message a work message is made from. */
interface DeliveredMessage {
  readonly subject: string;
  readonly reply?: string | undefined;
  readonly headers?: MsgHdrs | undefined;
  readonly data: Uint8Array;
}

/**
 * A JetStream message pulled for work, with the acknowledgement protocol spelled out. Shoal
 * pulls with raw `MSG.NEXT` requests (see `pull.ts`), so it acks by publishing the protocol's
 * tokens to the message's reply subject, exactly as the client libraries do.
 */
export class WorkMessage {
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  readonly subject: string;
  /** 1 on first delivery; above 1 when redelivered after a NAK or an expired ack wait. */
  readonly deliveryCount: number;
  /** Sequence in the stream; stable across redeliveries. */
  readonly streamSequence: number;
  /**
   * Items still waiting for this consumer when the server sent this one. Zero means the queue
   * was drained: waiting to fill a batch would only add latency.
   */
  readonly pending: number;
  readonly #reply: string;
  readonly #nc: NatsConnection;
  #settled = false;

  constructor(nc: NatsConnection, msg: DeliveredMessage) {
    if (msg.reply === undefined) throw new Error("JetStream message without an ack subject");
    this.#nc = nc;
    this.#reply = msg.reply;
    this.data = msg.data;
    this.headers = msg.headers;
    this.subject = msg.subject;
    const info = parseAckSubject(msg.reply);
    this.deliveryCount = info.deliveryCount;
    this.streamSequence = info.streamSequence;
    this.pending = info.pending;
  }

  /**
   * Rebuilds a message another process pulled and handed over; acks from here settle the
   * original delivery.
   *
   * @throws Error when `parts.reply` is not a JetStream ack subject.
   */
  static fromParts(nc: NatsConnection, parts: WorkMessageParts): WorkMessage {
    let hdrs: MsgHdrs | undefined;
    if (parts.headers.length > 0) {
      hdrs = createHeaders();
      for (const [name, value] of parts.headers) hdrs.append(name, value);
    }
    return new WorkMessage(nc, {
      subject: parts.subject,
      reply: parts.reply,
      headers: hdrs,
      data: parts.data,
    });
  }

  /**
   * Gives the delivery away: returns it as parts for another holder (the machine-local queue)
   * and settles this handle without telling JetStream, so this process sends nothing more for
   * it (no in-progress, no NAK on shutdown). The new holder answers for it from now on.
   *
   * @throws Error when the message was already settled here.
   */
  handOff(): WorkMessageParts {
    if (this.#settled) throw new Error("work message already settled; it cannot be handed off");
    this.#settled = true;
    const pairs: [string, string][] = [];
    if (this.headers !== undefined) {
      for (const [name, values] of this.headers) for (const v of values) pairs.push([name, v]);
    }
    return { subject: this.subject, reply: this.#reply, headers: pairs, data: this.data };
  }

  /** Whether ack, nak or term was already sent; a settled message takes no further acks. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Done: removes the item from the work queue. Call only after its answer is published. */
  ack(): void {
    this.#settle("+ACK");
  }

  /** Put back for redelivery, after `delayMs` when given. */
  nak(delayMs?: number): void {
    this.#settle(
      delayMs === undefined ? "-NAK" : `-NAK ${JSON.stringify({ delay: delayMs * 1e6 })}`,
    );
  }

  /** Still working: restarts the ack wait so a long item is not redelivered meanwhile. */
  working(): void {
    if (!this.#settled) this.#nc.publish(this.#reply, "+WPI");
  }

  /** Never redeliver (poison or already answered); the reason is kept in the advisory. */
  term(reason: string): void {
    this.#settle(`+TERM ${reason}`);
  }

  #settle(token: string): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#nc.publish(this.#reply, token);
  }
}

interface AckInfo {
  readonly deliveryCount: number;
  readonly streamSequence: number;
  readonly pending: number;
}

/**
 * Reads delivery count and stream sequence from an ack subject. Two layouts exist:
 * `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>` and the newer one with
 * domain and account hash after `$JS.ACK` (and a trailing token).
 */
export function parseAckSubject(subject: string): AckInfo {
  const tokens = subject.split(".");
  if (tokens[0] !== "$JS" || tokens[1] !== "ACK") {
    throw new Error(`not a JetStream ack subject: ${subject}`);
  }
  const offset = tokens.length === 9 ? 4 : tokens.length >= 11 ? 6 : -1;
  const delivered = Number(tokens[offset]);
  const sequence = Number(tokens[offset + 1]);
  const pending = Number(tokens[offset + 4]);
  if (offset < 0 || ![delivered, sequence, pending].every(Number.isSafeInteger)) {
    throw new Error(`unrecognised JetStream ack subject: ${subject}`);
  }
  return { deliveryCount: delivered, streamSequence: sequence, pending };
}
