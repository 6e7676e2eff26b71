import { InvalidArgumentError, type ChatTurn, type GenerateCall } from "@shoal/gateway";

/** A `POST /v1/chat/completions` or `POST /v1/completions` body, validated. */
export interface OpenAIGenerateRequest {
  readonly call: GenerateCall;
  readonly stream: boolean;
  /** `stream_options.include_usage`: one last chunk with the usage and no choices. */
  readonly includeUsage: boolean;
}

type Body = Record<string, unknown>;

function asBody(body: unknown): Body {
  if (
    typeof body !== "object" ||
    body === null ||
    Array.isArray(body) ||
    body instanceof Uint8Array
  ) {
    throw new InvalidArgumentError("request body must be an object");
  }
  return body as Body;
}

/**
 * Validates OpenAI's chat completions request. Message content may be a string or an array of
 * text parts (what the SDKs send for multi-part messages); other part types (images, audio)
 * are refused, since no model here reads them. Features Shoal does not implement (`tools`,
 * `logprobs`) are refused rather than silently ignored.
 */
export function parseChatRequest(raw: unknown): OpenAIGenerateRequest {
  const b = asBody(raw);
  const messages = b["messages"];
  if (!Array.isArray(messages))
    throw new InvalidArgumentError("`messages` is required and must be an array");
  const turns: ChatTurn[] = messages.map((m, i) => chatTurn(m, i));
  refuseUnsupported(b, ["tools", "functions"]);
  return common(b, { messages: turns }, b["max_completion_tokens"] ?? b["max_tokens"]);
}

/** Validates OpenAI's legacy completions request: one string prompt. */
export function parseCompletionRequest(raw: unknown): OpenAIGenerateRequest {
  const b = asBody(raw);
  let prompt = b["prompt"];
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === "string")
    prompt = prompt[0];
  if (typeof prompt !== "string") {
    throw new InvalidArgumentError(
      "`prompt` is required and must be a string (or an array of one string)",
    );
  }
  if (b["echo"] === true) throw new InvalidArgumentError("`echo` is not supported");
  if (b["suffix"] !== undefined && b["suffix"] !== null)
    throw new InvalidArgumentError("`suffix` is not supported");
  if (
    b["best_of"] !== undefined &&
    b["best_of"] !== null &&
    b["best_of"] !== 1 &&
    b["best_of"] !== b["n"]
  ) {
    throw new InvalidArgumentError("`best_of` is not supported");
  }
  return common(b, { prompt }, b["max_tokens"]);
}

function chatTurn(m: unknown, i: number): ChatTurn {
  if (typeof m !== "object" || m === null || Array.isArray(m)) {
    throw new InvalidArgumentError(`messages[${i}] must be an object`);
  }
  const { role, content } = m as Body;
  if (typeof role !== "string")
    throw new InvalidArgumentError(`messages[${i}].role must be a string`);
  if (typeof content === "string") return { role, content };
  if (Array.isArray(content)) {
    const texts = content.map((part, j) => {
      const p = part as Body | null;
      if (
        typeof p !== "object" ||
        p === null ||
        p["type"] !== "text" ||
        typeof p["text"] !== "string"
      ) {
        throw new InvalidArgumentError(`messages[${i}].content[${j}] must be a text part`);
      }
      return p["text"];
    });
    return { role, content: texts.join("") };
  }
  throw new InvalidArgumentError(
    `messages[${i}].content must be a string or an array of text parts`,
  );
}

function refuseUnsupported(b: Body, keys: readonly string[]): void {
  for (const key of keys) {
    const value = b[key];
    if (value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0)) {
      throw new InvalidArgumentError(`\`${key}\` is not supported`);
    }
  }
}

function common(
  b: Body,
  input: Pick<GenerateCall, "prompt" | "messages">,
  maxTokens: unknown,
): OpenAIGenerateRequest {
  const model = b["model"];
  if (typeof model !== "string" || model === "") {
    throw new InvalidArgumentError("`model` is required and must be a string");
  }
  if (b["logprobs"] === true || typeof b["logprobs"] === "number") {
    throw new InvalidArgumentError("`logprobs` is not supported");
  }
  const stream = optional(b, "stream", "boolean") ?? false;
  const options = b["stream_options"];
  let includeUsage = false;
  if (options !== undefined && options !== null) {
    if (!stream)
      throw new InvalidArgumentError("`stream_options` is only allowed with `stream: true`");
    if (typeof options !== "object" || Array.isArray(options)) {
      throw new InvalidArgumentError("`stream_options` must be an object");
    }
    const include = (options as Body)["include_usage"];
    if (include !== undefined && include !== null && typeof include !== "boolean") {
      throw new InvalidArgumentError("`stream_options.include_usage` must be a boolean");
    }
    includeUsage = include === true;
  }
  const stop = b["stop"];
  let stops: string[] | undefined;
  if (typeof stop === "string") stops = [stop];
  else if (Array.isArray(stop) && stop.every((s) => typeof s === "string")) stops = stop;
  else if (stop !== undefined && stop !== null) {
    throw new InvalidArgumentError("`stop` must be a string or an array of strings");
  }
  const call: GenerateCall = {
    model,
    ...input,
    n: optional(b, "n", "number"),
    maxTokens: maxTokens === null ? undefined : numberField("max_tokens", maxTokens),
    temperature: optional(b, "temperature", "number"),
    topP: optional(b, "top_p", "number"),
    // Not OpenAI's, but what vLLM and llama.cpp servers take beside its fields.
    topK: optional(b, "top_k", "number"),
    minP: optional(b, "min_p", "number"),
    repetitionPenalty: optional(b, "repetition_penalty", "number"),
    seed: optional(b, "seed", "number"),
    stop: stops,
  };
  return { call, stream, includeUsage };
}

function optional(b: Body, key: string, type: "number"): number | undefined;
function optional(b: Body, key: string, type: "boolean"): boolean | undefined;
function optional(b: Body, key: string, type: "number" | "boolean"): number | boolean | undefined {
  const value = b[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== type) throw new InvalidArgumentError(`\`${key}\` must be a ${type}`);
  return value as number | boolean;
}

function numberField(key: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number") throw new InvalidArgumentError(`\`${key}\` must be a number`);
  return value;
}
