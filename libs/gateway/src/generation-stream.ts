import { create } from "@bufbuild/protobuf";
import {
  FinishReason,
  StreamControlSchema,
  type StreamControl,
  type StreamEvent,
  type Timings,
} from "@shoal/proto";
import {
  DeadlineExceededError,
  InternalError,
  UnavailableError,
  type RequestError,
} from "./errors.js";
import { fromWorkError } from "./work-errors.js";

/** Why a sequence ended, in the words OpenAI's API uses. */
export type GenerationFinish = "stop" | "length" | "cancelled";

/** What a protocol handler reads from a {@link GenerationStream}, in order. */
export type GenerationEvent =
  | {
      readonly kind: "tokens";
      /** Which of the request's `n` sequences. */
      readonly index: number;
      /** Text since this sequence's previous event. */
      readonly text: string;
      readonly tokens: number;
    }
  | {
      readonly kind: "done";
      readonly index: number;
      readonly finishReason: GenerationFinish;
      readonly promptTokens: number;
      readonly completionTokens: number;
      readonly timings: Timings | undefined;
    };

export interface GenerationStreamOptions {
  readonly requestId: string;
  readonly n: number;
  /** Events the worker may send beyond what the client has taken. */
  readonly window: number;
  /** Until the first event: the request's deadline. */
  readonly startTimeoutMs: number;
  /** Longest silence once the stream has started before it is given up. */
  readonly idleTimeoutMs: number;
  readonly sendControl: (subject: string, control: StreamControl) => void;
  /**
   * Called once when the stream ends, however it ends, with the tokens it used: output tokens
   * as they streamed, the prompt's once a sequence finished (0 for a stream cut short before).
   */
  readonly onEnd: (usage: GenerationUsage) => void;
}

/** Model tokens one generation used. */
export interface GenerationUsage {
  readonly promptTokens: number;
  readonly outputTokens: number;
}

type Slot =
  | { readonly kind: "event"; readonly event: GenerationEvent }
  | { readonly kind: "error"; readonly error: RequestError }
  | { readonly kind: "end" };

/**
 * The ingress end of one streamed generation. Events arrive from a worker over core NATS and
 * wait here until the protocol handler takes them; taking them is what grants the worker
 * credit, so a client that reads slowly slows the worker down (it coalesces text meanwhile)
 * instead of growing this buffer, which never holds more than the window.
 *
 * The stream binds to the first attempt it hears from; events of any other attempt (an item
 * redelivered while the first worker still runs it) are answered with a cancel, so the client
 * gets exactly one answer.
 */
export class GenerationStream implements AsyncIterable<GenerationEvent> {
  readonly #o: GenerationStreamOptions;
  readonly #slots: Slot[] = [];
  #wake: (() => void) | undefined;
  #attempt: string | undefined;
  #controlSubject = "";
  #nextSeq = 0;
  #taken = 0;
  #credited = 0;
  #done = 0;
  #ended = false;
  #promptTokens = 0;
  #outputTokens = 0;
  #cancelled = false;
  #timer: NodeJS.Timeout;
  readonly #started: Promise<void>;
  #markStarted!: (error?: RequestError) => void;

  constructor(options: GenerationStreamOptions) {
    this.#o = options;
    this.#timer = setTimeout(() => {
      this.#end(
        new DeadlineExceededError(`generation did not start within ${options.startTimeoutMs} ms`),
      );
    }, options.startTimeoutMs);
    this.#started = new Promise<void>((resolve, reject) => {
      this.#markStarted = (error) => {
        if (error === undefined) resolve();
        else reject(error);
      };
    });
    this.#started.catch(() => undefined);
  }

  get requestId(): string {
    return this.#o.requestId;
  }

  /** Resolves at the first event, rejects when the stream ends in an error before it. */
  started(): Promise<void> {
    return this.#started;
  }

  /** Whether the stream has ended (completed, failed or cancelled). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Ends the stream because a step before the worker failed (annotation, queueing). */
  fail(error: RequestError): void {
    this.#end(error);
  }

  /**
   * The client went away: the worker is told to stop decoding, and the stream ends. An
   * attempt that has not spoken yet is cancelled when its first event arrives.
   */
  cancel(): void {
    if (this.#ended) return;
    this.#cancelled = true;
    if (this.#attempt !== undefined) this.#sendCancel(this.#controlSubject, this.#attempt);
    this.#end(undefined);
  }

  /** Takes one event from the worker. */
  deliver(event: StreamEvent): void {
    if (this.#ended) {
      // Too late for the client; stop the worker wasting compute on it.
      this.#sendCancel(event.controlSubject, event.attempt);
      return;
    }
    if (this.#attempt === undefined) {
      this.#attempt = event.attempt;
      this.#controlSubject = event.controlSubject;
    } else if (event.attempt !== this.#attempt) {
      this.#sendCancel(event.controlSubject, event.attempt);
      return;
    }
    if (event.seq < this.#nextSeq) return;
    if (event.seq > this.#nextSeq) {
      this.#end(new UnavailableError("generation stream lost events"));
      return;
    }
    this.#nextSeq++;
    if (this.#slots.length >= this.#o.window * 2) {
      this.#end(new InternalError("worker ignored flow control"));
      return;
    }
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#end(new UnavailableError(`generation stalled for ${this.#o.idleTimeoutMs} ms`));
    }, this.#o.idleTimeoutMs);
    const e = event.event;
    switch (e.case) {
      case "tokens":
        this.#push({
          kind: "event",
          event: {
            kind: "tokens",
            index: e.value.index,
            text: e.value.text,
            tokens: e.value.tokens,
          },
        });
        this.#outputTokens += e.value.tokens;
        break;
      case "done":
        this.#push({
          kind: "event",
          event: {
            kind: "done",
            index: e.value.index,
            finishReason: finishOf(e.value.finishReason),
            promptTokens: e.value.promptTokens,
            completionTokens: e.value.completionTokens,
            timings: e.value.timings,
          },
        });
        // Every sequence shares the one prompt.
        this.#promptTokens = Math.max(this.#promptTokens, e.value.promptTokens);
        if (++this.#done >= this.#o.n) this.#end(undefined);
        break;
      case "error":
        this.#end(fromWorkError(e.value));
        return;
      default:
        this.#end(new InternalError("worker sent an empty stream event"));
        return;
    }
    this.#markStarted();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GenerationEvent, void, undefined> {
    for (;;) {
      const slot = this.#slots.shift();
      if (slot === undefined) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      if (slot.kind === "end") return;
      if (slot.kind === "error") throw slot.error;
      this.#taken++;
      this.#credit();
      yield slot.event;
    }
  }

  /**
   * Credit goes out when half the window has been taken, or at once when the worker has used
   * its whole window, so a client that keeps up never stalls the worker and a fast stream costs
   * one control message per half window rather than one per event.
   */
  #credit(): void {
    if (this.#ended || this.#attempt === undefined) return;
    const owed = this.#taken - this.#credited;
    if (owed <= 0) return;
    // The worker is held back only once it has sent a whole window beyond the last credit.
    const blocked = this.#nextSeq - this.#credited >= this.#o.window;
    if (owed < Math.max(1, this.#o.window / 2) && !blocked) return;
    this.#credited = this.#taken;
    this.#o.sendControl(
      this.#controlSubject,
      create(StreamControlSchema, { attempt: this.#attempt, taken: this.#taken }),
    );
  }

  #sendCancel(subject: string, attempt: string): void {
    if (subject === "") return;
    this.#o.sendControl(subject, create(StreamControlSchema, { attempt, cancel: true }));
  }

  #push(slot: Slot): void {
    this.#slots.push(slot);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #end(error: RequestError | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    if (error !== undefined && this.#attempt !== undefined && !this.#cancelled) {
      this.#sendCancel(this.#controlSubject, this.#attempt);
    }
    this.#markStarted(error);
    this.#push(error === undefined ? { kind: "end" } : { kind: "error", error });
    this.#o.onEnd({ promptTokens: this.#promptTokens, outputTokens: this.#outputTokens });
  }
}

function finishOf(reason: FinishReason): GenerationFinish {
  switch (reason) {
    case FinishReason.LENGTH:
      return "length";
    case FinishReason.CANCELLED:
      return "cancelled";
    default:
      return "stop";
  }
}
