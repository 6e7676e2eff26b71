import type { GenerationEvent, GenerationFinish } from "@shoal/gateway";

/** OpenAI's two text-generation APIs, which differ only in how text and objects are named. */
export type GenerateApi = "chat" | "completion";

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** Sums a request's usage: the prompt is counted once, completions over all `n` choices. */
export class UsageCounter {
  #prompt = 0;
  #completion = 0;

  add(done: Extract<GenerationEvent, { kind: "done" }>): void {
    this.#prompt = Math.max(this.#prompt, done.promptTokens);
    this.#completion += done.completionTokens;
  }

  get usage(): Usage {
    return {
      prompt_tokens: this.#prompt,
      completion_tokens: this.#completion,
      total_tokens: this.#prompt + this.#completion,
    };
  }
}

/** `cancelled` never reaches a client that is still there, except after a stall: it read too slowly. */
function finish(reason: GenerationFinish): "stop" | "length" {
  return reason === "length" ? "length" : "stop";
}

export interface ResponseHead {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** The non-streamed answer: each choice's whole text. */
export function completionBody(
  api: GenerateApi,
  head: ResponseHead,
  choices: readonly { text: string; finish: GenerationFinish }[],
  usage: Usage,
): unknown {
  return {
    id: head.id,
    object: api === "chat" ? "chat.completion" : "text_completion",
    created: head.created,
    model: head.model,
    choices: choices.map((c, index) =>
      api === "chat"
        ? {
            index,
            message: { role: "assistant", content: c.text, refusal: null },
            logprobs: null,
            finish_reason: finish(c.finish),
          }
        : { index, text: c.text, logprobs: null, finish_reason: finish(c.finish) },
    ),
    usage,
  };
}

/** One streamed chunk for one choice: text, or its finish reason. */
export function chunkBody(
  api: GenerateApi,
  head: ResponseHead,
  choice: { index: number; text?: string; role?: true; finish?: GenerationFinish },
  includeUsage: boolean,
): unknown {
  const finishReason = choice.finish === undefined ? null : finish(choice.finish);
  const delta: Record<string, string> = {};
  if (choice.role === true) delta["role"] = "assistant";
  if (choice.text !== undefined) delta["content"] = choice.text;
  return {
    id: head.id,
    object: api === "chat" ? "chat.completion.chunk" : "text_completion",
    created: head.created,
    model: head.model,
    choices: [
      api === "chat"
        ? { index: choice.index, delta, logprobs: null, finish_reason: finishReason }
        : {
            index: choice.index,
            text: choice.text ?? "",
            logprobs: null,
            finish_reason: finishReason,
          },
    ],
    // With include_usage every chunk carries `usage: null` and one last chunk the totals.
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** The last chunk `stream_options.include_usage` asks for: no choices, the request's usage. */
export function usageChunk(api: GenerateApi, head: ResponseHead, usage: Usage): unknown {
  return {
    id: head.id,
    object: api === "chat" ? "chat.completion.chunk" : "text_completion",
    created: head.created,
    model: head.model,
    choices: [],
    usage,
  };
}
