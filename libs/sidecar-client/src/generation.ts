import { Fields } from "./fields.js";
import type { FrameBody } from "./frame.js";
import type { CallOptions } from "./call-options.js";

/** One chat turn, rendered by the sidecar with the model's chat template. */
export interface ChatTurn {
  readonly role: string;
  readonly content: string;
}

/**
 * Arguments of {@link SidecarClient.generate}: exactly one of `prompt` and `messages`. Unset
 * sampling fields take the sidecar's defaults (docs/sidecar-protocol.md, `generate`).
 *
 * `timeoutMs` here bounds the silence between two frames of the stream, not the whole
 * generation, which may legitimately run for minutes.
 */
export interface GenerateRequest extends CallOptions {
  /** A resident `generate` model. */
  readonly model: string;
  readonly prompt?: string;
  readonly messages?: readonly ChatTurn[];
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly minP?: number;
  readonly repetitionPenalty?: number;
  readonly seed?: number;
  readonly stop?: readonly string[];
  /** A LoRA adapter loaded with {@link SidecarClient.loadAdapter}; unset runs the base model. */
  readonly adapter?: string;
}

/** Text decoded since the previous event: whole UTF-8 characters, stop strings held back. */
export interface GeneratedTokens {
  readonly text: string;
  readonly tokenIds: number[];
}

export type FinishReason = "stop" | "length" | "cancelled";
const FINISH_REASONS = ["stop", "length", "cancelled"] as const satisfies readonly FinishReason[];

/** The last event of a generation. */
export interface GenerationDone {
  readonly finishReason: FinishReason;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly queueUs: number;
  readonly computeUs: number;
}

/** The wire form of {@link GenerateRequest}: snake_case, unset fields left out. */
export function generateFields(request: GenerateRequest): Record<string, unknown> {
  return {
    model: request.model,
    prompt: request.prompt,
    messages: request.messages?.map((m) => ({ role: m.role, content: m.content })),
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    top_p: request.topP,
    top_k: request.topK,
    min_p: request.minP,
    repetition_penalty: request.repetitionPenalty,
    seed: request.seed,
    stop: request.stop,
    adapter: request.adapter,
  };
}

export function parseTokens(body: FrameBody): GeneratedTokens {
  const f = new Fields(body, "generate tokens event");
  return { text: f.string("text"), tokenIds: f.uintArray("token_ids") };
}

export function parseDone(body: FrameBody): GenerationDone {
  const f = new Fields(body, "generate done event");
  return {
    finishReason: f.oneOf("finish_reason", FINISH_REASONS),
    promptTokens: f.uint("prompt_tokens"),
    completionTokens: f.uint("completion_tokens"),
    queueUs: f.uint("queue_us"),
    computeUs: f.uint("compute_us"),
  };
}

type Next =
  | { readonly kind: "tokens"; readonly value: GeneratedTokens }
  | { readonly kind: "end" }
  | { readonly kind: "error"; readonly error: Error };

/**
 * One sequence being generated: an async iterable of its token events, then {@link done}.
 *
 * Events are queued as they arrive and handed out in order; the queue is bounded by the
 * request's `max_tokens`, since the sidecar sends at most one event per token. Iteration ends
 * after the `done` event and throws the error when the stream ends in one; `done` settles the
 * same way, so a caller that only needs the totals can await it without iterating.
 */
export class Generation implements AsyncIterable<GeneratedTokens> {
  readonly #queue: Next[] = [];
  #wake: (() => void) | undefined;
  #finished = false;
  #iterating = false;
  readonly done: Promise<GenerationDone>;
  #resolveDone!: (done: GenerationDone) => void;
  #rejectDone!: (error: Error) => void;
  readonly #cancel: (id: number) => Promise<boolean>;

  constructor(
    /** The request id on the connection; the target of `cancel`. */
    readonly id: number,
    cancel: (id: number) => Promise<boolean>,
  ) {
    this.#cancel = cancel;
    this.done = new Promise((resolve, reject) => {
      this.#resolveDone = resolve;
      this.#rejectDone = reject;
    });
    // The caller may iterate instead of awaiting `done`; an error is thrown there too.
    this.done.catch(() => undefined);
  }

  /**
   * Asks the sidecar to stop this sequence at its next decode step; the stream then ends with
   * `finish_reason: "cancelled"`. Resolves false when the sequence had already finished.
   */
  cancel(): Promise<boolean> {
    if (this.#finished) return Promise.resolve(false);
    return this.#cancel(this.id);
  }

  /** Whether the final event (or an error) has arrived. */
  get finished(): boolean {
    return this.#finished;
  }

  /** @internal Called by the client for each `tokens` event. */
  pushTokens(tokens: GeneratedTokens): void {
    if (this.#finished) return;
    this.#enqueue({ kind: "tokens", value: tokens });
  }

  /** @internal Called by the client with the `done` event. */
  finish(done: GenerationDone): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#resolveDone(done);
    this.#enqueue({ kind: "end" });
  }

  /** @internal Called by the client when the stream ends in an error. */
  fail(error: Error): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#rejectDone(error);
    this.#enqueue({ kind: "error", error });
  }

  #enqueue(next: Next): void {
    this.#queue.push(next);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GeneratedTokens, void, undefined> {
    if (this.#iterating) throw new Error("a Generation can be iterated only once");
    this.#iterating = true;
    for (;;) {
      const next = this.#queue.shift();
      if (next === undefined) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        continue;
      }
      if (next.kind === "end") return;
      if (next.kind === "error") throw next.error;
      yield next.value;
    }
  }
}
