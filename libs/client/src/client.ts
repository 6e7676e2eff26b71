import { decode, encode } from "@msgpack/msgpack";
import { errorFor, ProtocolError, ShoalError } from "./errors.js";
import { float32View } from "./float32-rows.js";
import { retryAfterMs } from "./retry-after.js";

export interface ShoalClientOptions {
  /** Ingress, e.g. `http://localhost:8080`. */
  readonly baseUrl: string;
  /** Retries of a 429 or 503 answer, each after the server's `Retry-After`. @default 2 */
  readonly maxRetries?: number;
  /** Longest wait before a retry, whatever `Retry-After` says, ms. @default 30000 */
  readonly maxRetryDelayMs?: number;
  /** Time one attempt may take, ms. @default 60000 */
  readonly timeoutMs?: number;
  /** An API key (`npm run keys`), sent as `Authorization: Bearer`, for a cluster that needs one. */
  readonly apiKey?: string;
  /** Sent with every request (tracing, a proxy's own headers). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface EmbedRequest {
  readonly model: string;
  /** Texts, or token ids of the model's tokenizer (one list per input). */
  readonly input: string | readonly string[] | readonly (readonly number[])[];
  /** A narrower width, for models whose catalog entry allows it (Matryoshka). */
  readonly dimensions?: number;
  /** `false`: an input over the model's limit is an error instead of being cut. @default true */
  readonly truncate?: boolean;
}

export interface EmbedResult {
  readonly model: string;
  /** One row per input, in input order; each views the answer's bytes where it can. */
  readonly embeddings: Float32Array[];
  /** Whether each input was cut to the model's maximum length. */
  readonly truncated: boolean[];
  readonly usage: { readonly promptTokens: number; readonly totalTokens: number };
  /** Ingress's id for the request (`x-request-id`), for logs and traces. */
  readonly requestId: string | undefined;
}

export interface ModelInfo {
  readonly id: string;
  readonly ownedBy: string;
}

const MSGPACK = "application/msgpack";

/**
 * A small client for Shoal's REST API speaking MessagePack both ways, so embeddings arrive as
 * raw float32 bytes rather than JSON numbers or base64. Overload (429) and unavailability
 * (503) are retried after the server's `Retry-After`; every other error is thrown at once as
 * a typed {@link ShoalError}.
 */
export class ShoalClient {
  readonly #baseUrl: string;
  readonly #maxRetries: number;
  readonly #maxRetryDelayMs: number;
  readonly #timeoutMs: number;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(options: ShoalClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#maxRetries = options.maxRetries ?? 2;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#headers = {
      ...options.headers,
      ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
    };
    if (!Number.isInteger(this.#maxRetries) || this.#maxRetries < 0) {
      throw new RangeError("maxRetries must be a non-negative integer");
    }
  }

  async embed(request: EmbedRequest): Promise<EmbedResult> {
    const body: Record<string, unknown> = { model: request.model, input: request.input };
    if (request.dimensions !== undefined) body["dimensions"] = request.dimensions;
    if (request.truncate !== undefined) body["truncate"] = request.truncate;
    const { value, requestId } = await this.#call("POST", "/v1/embeddings", body);
    const answer = value as {
      model?: unknown;
      data?: { embedding?: unknown; truncated?: unknown }[];
      usage?: { prompt_tokens?: unknown; total_tokens?: unknown };
    };
    if (!Array.isArray(answer.data) || typeof answer.model !== "string") {
      throw new ProtocolError("embeddings answer has no `data` list");
    }
    const embeddings = answer.data.map((d, i) => {
      if (!(d.embedding instanceof Uint8Array)) {
        throw new ProtocolError(`embedding ${i} is not raw float32 bytes`);
      }
      return float32View(d.embedding);
    });
    return {
      model: answer.model,
      embeddings,
      truncated: answer.data.map((d) => d.truncated === true),
      usage: {
        promptTokens: Number(answer.usage?.prompt_tokens ?? 0),
        totalTokens: Number(answer.usage?.total_tokens ?? 0),
      },
      requestId,
    };
  }

  async models(): Promise<ModelInfo[]> {
    const { value } = await this.#call("GET", "/v1/models", undefined);
    const list = (value as { data?: { id?: unknown; owned_by?: unknown }[] }).data;
    if (!Array.isArray(list)) throw new ProtocolError("models answer has no `data` list");
    return list.map((m) => {
      if (typeof m.id !== "string") throw new ProtocolError("a listed model has no id");
      return { id: m.id, ownedBy: typeof m.owned_by === "string" ? m.owned_by : "" };
    });
  }

  async #call(
    method: "GET" | "POST",
    path: string,
    body: unknown,
  ): Promise<{ value: unknown; requestId: string | undefined }> {
    const payload = body === undefined ? undefined : encode(body);
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${this.#baseUrl}${path}`, {
        method,
        headers: {
          ...this.#headers,
          accept: MSGPACK,
          ...(payload === undefined ? {} : { "content-type": MSGPACK }),
        },
        body: payload,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      const requestId = res.headers.get("x-request-id") ?? undefined;
      if (res.ok) return { value: decodeAnswer(res, bytes), requestId };
      const error = toError(res, bytes, attempt);
      if ((res.status !== 429 && res.status !== 503) || attempt > this.#maxRetries) throw error;
      const wait = retryAfterMs(res.headers.get("retry-after")) ?? 250 * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, this.#maxRetryDelayMs)));
    }
  }
}

function decodeAnswer(res: Response, bytes: Uint8Array): unknown {
  const type = res.headers.get("content-type") ?? "";
  try {
    if (type.startsWith(MSGPACK)) return decode(bytes);
    if (type.startsWith("application/json")) return JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new ProtocolError(`unreadable ${type} answer (HTTP ${res.status})`, { cause });
  }
  throw new ProtocolError(`unexpected ${type || "untyped"} answer (HTTP ${res.status})`);
}

function toError(res: Response, bytes: Uint8Array, attempts: number): ShoalError {
  let message = `HTTP ${res.status}`;
  let code = "unknown";
  try {
    const error = (decodeAnswer(res, bytes) as { error?: { message?: unknown; code?: unknown } })
      .error;
    if (typeof error?.message === "string") message = error.message;
    if (typeof error?.code === "string") code = error.code;
  } catch {
    // Not Shoal's error body (a proxy's page): the status alone says what happened.
  }
  const retryAfter = retryAfterMs(res.headers.get("retry-after"));
  return errorFor(
    res.status,
    message,
    code,
    retryAfter === undefined ? undefined : retryAfter / 1000,
    attempts,
  );
}
