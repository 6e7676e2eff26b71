import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  headers as natsHeaders,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import { Headers } from "@shoal/jetstream";
import {
  StreamControlSchema,
  StreamEventSchema,
  type ErrorCode,
  type StreamDone,
  type WorkItem,
} from "@shoal/proto";
import { injectContext, natsHeaderCarrier } from "@shoal/telemetry";

export interface StreamOutOptions {
  readonly nc: NatsConnection;
  readonly item: WorkItem;
  readonly workerId: string;
  /** This execution of the item; ingress binds the request to one attempt. */
  readonly attempt: string;
  /** Sequences in the item. */
  readonly n: number;
  /** Events allowed beyond what ingress has credited. */
  readonly window: number;
  /** Window full for this long: the client stopped reading; the stream is cancelled. */
  readonly stallTimeoutMs: number;
  readonly ctx: Context;
  /** Called once when ingress cancels, or the client stalls past `stallTimeoutMs`. */
  readonly onCancel: (reason: string) => void;
}

type EventInit = MessageInitShape<typeof StreamEventSchema>["event"];

interface Pending {
  text: string;
  tokens: number;
  done: StreamDone | undefined;
}

/**
 * The worker end of one generation stream: events go to the item's reply subject, numbered,
 * never more than `window` beyond what ingress has credited. While the window is full, text
 * is coalesced per sequence, so a slow client costs one growing string per sequence (bounded
 * by `max_tokens`) rather than a flood of messages; a client that stays stalled gets its
 * generation cancelled. Control (credit, cancel) arrives on this attempt's own subject.
 */
export class StreamOut {
  readonly #o: StreamOutOptions;
  readonly #pending: Pending[];
  readonly #subscription: Subscription;
  readonly controlSubject: string;
  #seq = 0;
  #taken = 0;
  #cancelled = false;
  #closed = false;
  #stallTimer: NodeJS.Timeout | undefined;
  #drained: (() => void) | undefined;

  constructor(options: StreamOutOptions) {
    this.#o = options;
    this.#pending = Array.from({ length: options.n }, () => ({
      text: "",
      tokens: 0,
      done: undefined,
    }));
    this.controlSubject = `shoal.streamctl.v1.${options.workerId}.${options.attempt}`;
    this.#subscription = options.nc.subscribe(this.controlSubject, {
      callback: (err, msg) => {
        if (err === null) this.#onControl(msg.data);
      },
    });
  }

  /** Whether ingress cancelled the stream (or the client stalled). */
  get cancelled(): boolean {
    return this.#cancelled;
  }

  /** Events published so far. */
  get published(): number {
    return this.#seq;
  }

  tokens(index: number, text: string, tokens: number): void {
    const p = this.#pending[index];
    if (p === undefined || this.#cancelled) return;
    p.text += text;
    p.tokens += tokens;
    this.#flush();
  }

  done(index: number, done: StreamDone): void {
    const p = this.#pending[index];
    if (p === undefined || this.#cancelled) return;
    p.done = done;
    this.#flush();
  }

  /**
   * Ends the stream with an error. It goes out at once, whatever the window: it is the last
   * event, and the client must hear why.
   */
  error(code: ErrorCode, message: string): void {
    if (this.#cancelled) return;
    this.#publish({ case: "error", value: { code, message } });
    for (const p of this.#pending) p.done = undefined;
    this.#pending.length = 0;
  }

  /** Resolves once every buffered event is published (or the stream was cancelled). */
  async drained(): Promise<void> {
    while (!this.#cancelled && this.#hasBuffered()) {
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
      });
    }
  }

  /** Stops listening for control; call after the last event, before acking. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#stallTimer);
    this.#subscription.unsubscribe();
  }

  #hasBuffered(): boolean {
    return this.#pending.some((p) => p.text !== "" || p.done !== undefined);
  }

  #room(): boolean {
    return this.#seq < this.#taken + this.#o.window;
  }

  #flush(): void {
    for (const [index, p] of this.#pending.entries()) {
      if (p.text !== "" && this.#room()) {
        this.#publish({ case: "tokens", value: { index, text: p.text, tokens: p.tokens } });
        p.text = "";
        p.tokens = 0;
      }
      if (p.text === "" && p.done !== undefined && this.#room()) {
        this.#publish({ case: "done", value: p.done });
        p.done = undefined;
      }
    }
    if (!this.#hasBuffered()) {
      clearTimeout(this.#stallTimer);
      this.#stallTimer = undefined;
      const wake = this.#drained;
      this.#drained = undefined;
      wake?.();
    } else if (this.#stallTimer === undefined) {
      this.#stallTimer = setTimeout(() => {
        this.#cancel(`client read nothing for ${this.#o.stallTimeoutMs} ms`);
      }, this.#o.stallTimeoutMs);
    }
  }

  #publish(event: EventInit): void {
    const { item, nc } = this.#o;
    const body = create(StreamEventSchema, {
      requestId: item.requestId,
      workerId: this.#o.workerId,
      attempt: this.#o.attempt,
      seq: this.#seq++,
      controlSubject: this.controlSubject,
      event,
    });
    const hdrs = natsHeaders();
    hdrs.set(Headers.requestId, item.requestId);
    injectContext(this.#o.ctx, natsHeaderCarrier(hdrs));
    nc.publish(item.replySubject, toBinary(StreamEventSchema, body), { headers: hdrs });
  }

  #onControl(data: Uint8Array): void {
    let control;
    try {
      control = fromBinary(StreamControlSchema, data);
    } catch {
      return;
    }
    if (control.attempt !== this.#o.attempt) return;
    if (control.cancel) {
      this.#cancel("cancelled by ingress");
      return;
    }
    if (control.taken > this.#taken) {
      this.#taken = Math.min(control.taken, this.#seq);
      clearTimeout(this.#stallTimer);
      this.#stallTimer = undefined;
      this.#flush();
    }
  }

  #cancel(reason: string): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    clearTimeout(this.#stallTimer);
    const wake = this.#drained;
    this.#drained = undefined;
    wake?.();
    this.#o.onCancel(reason);
  }
}
