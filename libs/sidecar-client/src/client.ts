import { createConnection, type Socket } from "node:net";
import { encodeFrame, FRAME_HEADER_BYTES, FrameDecoder, type FrameBody } from "./frame.js";
import { FrameTooLargeError } from "./frame-too-large-error.js";
import {
  checkTimeout,
  compileSidecarClientOptions,
  type CompiledSidecarClientOptions,
  type SidecarClientOptions,
} from "./options.js";
import {
  generateFields,
  Generation,
  parseDone,
  parseTokens,
  type GenerateRequest,
} from "./generation.js";
import {
  parseClassify,
  parseExtract,
  parseScore,
  type ClassifyResult,
  type ExtractResult,
  type ScoreRequest,
  type ScoreResult,
  type TextsRequest,
} from "./heads.js";
import {
  parseEmbed,
  parseEnvelope,
  parseHealth,
  parseAdapterLoad,
  parseLoad,
  parseStats,
  parseUnload,
  type EmbedResult,
  type HealthResult,
  type AdapterLoadResult,
  type LoadResult,
  type StatsResult,
  type UnloadResult,
} from "./responses.js";
import type { CallOptions } from "./call-options.js";
import { Fields } from "./fields.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";
import { SidecarTimeoutError } from "./sidecar-timeout-error.js";
import { SidecarUnavailableError } from "./sidecar-unavailable-error.js";

/** Arguments of {@link SidecarClient.embed}. */
export interface EmbedRequest extends CallOptions {
  /** A resident model. */
  readonly model: string;
  /**
   * The inputs to embed: texts, or the token ids of one in the model's vocabulary without its
   * special tokens (which the sidecar adds, as for a text), side by side in one batch. The
   * sidecar enforces its own `--max-batch-items` and refuses an empty list.
   */
  readonly inputs: readonly (string | readonly number[])[];
  /**
   * Cut inputs longer than the model's limit (`true`) or refuse them with `input_too_long`.
   * Left unset, the sidecar's default (`true`) applies.
   */
  readonly truncate?: boolean;
  /**
   * One W3C context per distinct request in the batch, so each request's trace records the
   * compute it shared with the others.
   */
  readonly traceparents?: readonly string[];
}

/** Runtimes a model can be loaded on; see {@link LoadOptions.backend}. */
export type LoadBackend = "candle" | "sim" | "openai";

/** How a GGUF generator's matrices are held (see {@link LoadOptions.ggufWeights}). */
export type GgufWeights = "kernels" | "stored" | "f32";

/**
 * Parameters of a simulated model (docs/simulated-backend.md). Every field is optional and
 * defaults to the named calibration profile's value; the sidecar validates them and answers
 * `bad_request` for a negative, mistyped or out-of-range one.
 */
export interface SimLoadOptions {
  /**
   * Calibration profile supplying the defaults.
   * @default "minilm-l6-cpu"
   */
  readonly profile?: string;
  /** Embedding width, 1..=16384. */
  readonly dim?: number;
  /** Longest input in tokens, special tokens included; at least 2. */
  readonly maxInputTokens?: number;
  /** Memory the model reports; nothing is allocated. */
  readonly memoryBytes?: number;
  /** How long the load takes, ms, spent on the model's thread as a real load would. */
  readonly loadMs?: number;
  /** Per-batch overhead of the cost model, µs. */
  readonly fixedUs?: number;
  /** Per-input cost, µs. */
  readonly perSequenceUs?: number;
  /** Cost per padded token (inputs × longest input), ns. */
  readonly perPaddedTokenNs?: number;
}

/**
 * Where an `openai` model's remote engine is (docs/external-runtime.md); the sidecar checks it
 * lists `remoteModel` and runs one probe before it answers the load.
 */
export interface OpenAiLoadOptions {
  /** `http://host[:port][/prefix]`, without `/v1`. */
  readonly url: string;
  /** The name the remote lists in `GET /v1/models`. */
  readonly remoteModel: string;
  /** `embedding` through `/v1/embeddings`, `generate` through streamed completions. */
  readonly family: "embedding" | "generate";
  /** Sent as `Authorization: Bearer`; the sidecar never logs it. */
  readonly apiKey?: string;
  /** Longest wait to connect and for each read from the remote, ms. @default 60000 */
  readonly remoteTimeoutMs?: number;
}

/** Options of {@link SidecarClient.load}. */
export interface LoadOptions extends CallOptions {
  /**
   * Runtime to load on. Left unset, the sidecar's `--backend` applies (itself `candle` unless
   * the whole sidecar is simulated).
   */
  readonly backend?: LoadBackend;
  /** Simulated-model parameters; only valid when the model is loaded on `sim`. */
  readonly sim?: SimLoadOptions;
  /** The remote engine; required with backend `openai`, which then takes no `path`. */
  readonly openai?: OpenAiLoadOptions;
  /**
   * Candle only: how a GGUF generator's matrices are held. `kernels` (the sidecar's default):
   * for the device's fastest kernels (on CPU, Q4_1, Q5_0 and Q5_1 held exactly as Q8_0 plus
   * block minimums; numerics within a few hundredths of a logit of the exact model's);
   * `stored`: exactly as in the file (llama.cpp's numerics); `f32`: expanded to f32 (about 6×
   * the memory of Q4_1; transformers' numerics).
   */
  readonly ggufWeights?: GgufWeights;
  /**
   * Candle only: what an encoder computes in (`f16`/`bf16` halve its memory and use a GPU's
   * tensor cores). Generators refuse anything but `f32`.
   *
   * @default "f32"
   */
  readonly dtype?: "f32" | "f16" | "bf16";
  /**
   * Model threads taking the model's batches from its queue, each running one batch at a time
   * with its own copy of the weights (batch models only; 1 to 64). With the sidecar's
   * `--compute-threads` at cores ÷ threads they run side by side on separate cores.
   *
   * @default 1
   */
  readonly threads?: number;
}

/** The wire form of {@link SimLoadOptions}: snake_case keys, unset fields left out. */
function simFields(sim: SimLoadOptions): Record<string, unknown> {
  return {
    profile: sim.profile,
    dim: sim.dim,
    max_input_tokens: sim.maxInputTokens,
    memory_bytes: sim.memoryBytes,
    load_ms: sim.loadMs,
    fixed_us: sim.fixedUs,
    per_sequence_us: sim.perSequenceUs,
    per_padded_token_ns: sim.perPaddedTokenNs,
  };
}

/** The wire form of {@link OpenAiLoadOptions}. */
function openAiFields(openai: OpenAiLoadOptions): Record<string, unknown> {
  return {
    url: openai.url,
    remote_model: openai.remoteModel,
    family: openai.family,
    api_key: openai.apiKey,
    timeout_ms: openai.remoteTimeoutMs,
  };
}

interface Pending {
  readonly op: string;
  readonly resolve: (body: FrameBody) => void;
  readonly reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  /**
   * Set for `generate`: its `tokens` events go here and leave the request pending; each one
   * restarts the timer, which for a stream bounds the silence between frames.
   */
  readonly stream?: {
    readonly onTokens: (body: FrameBody) => void;
    readonly restartTimer: () => NodeJS.Timeout;
  };
}

const MAX_ID = 0xffff_ffff;

function textsFields(request: TextsRequest): Record<string, unknown> {
  return {
    model: request.model,
    inputs: request.inputs,
    truncate: request.truncate,
    traceparents: request.traceparents,
  };
}

/**
 * The worker's connection to its sidecar (docs/sidecar-protocol.md).
 *
 * One connection carries every request: each gets a fresh numeric id, responses are matched by
 * id in whatever order they come, so a long batch on one model never holds up `stats` or a batch
 * on another. Each request has its own timeout. When the connection ends, every request in
 * flight fails at once with {@link SidecarUnavailableError}: none of them can be answered any more,
 * and the worker must learn that now rather than one timeout later.
 *
 * Writes are not throttled: the worker bounds the work it holds, and so the bytes in flight.
 */
export class SidecarClient {
  readonly #socket: Socket;
  readonly #options: CompiledSidecarClientOptions;
  readonly #decoder: FrameDecoder;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Set once the connection is unusable; every later call fails with it. */
  #reason: SidecarUnavailableError | undefined;
  #socketError: Error | undefined;
  #closedByClient = false;
  readonly #closed: Promise<Error | undefined>;

  /**
   * Connects to the sidecar's socket.
   *
   * @throws RangeError or TypeError when `options` are invalid.
   * @throws SidecarUnavailableError when nothing accepts on `socketPath`.
   */
  static connect(options: SidecarClientOptions): Promise<SidecarClient> {
    return new Promise((resolve, reject) => {
      // Inside the executor, so invalid options reject like every other failure here.
      const compiled = compileSidecarClientOptions(options);
      const socket = createConnection({ path: compiled.socketPath });
      const onError = (error: Error): void => {
        socket.destroy();
        reject(
          new SidecarUnavailableError(
            `cannot connect to the sidecar at ${compiled.socketPath}: ${error.message}`,
            { cause: error },
          ),
        );
      };
      socket.once("error", onError);
      socket.once("connect", () => {
        socket.off("error", onError);
        resolve(new SidecarClient(socket, compiled));
      });
    });
  }

  private constructor(socket: Socket, options: CompiledSidecarClientOptions) {
    this.#socket = socket;
    this.#options = options;
    this.#decoder = new FrameDecoder({ maxFrameBytes: options.maxFrameBytes });
    this.#closed = new Promise((resolve) => {
      socket.once("close", () => {
        const reason =
          this.#reason ??
          new SidecarUnavailableError(
            `the sidecar at ${options.socketPath} closed the connection`,
            {
              cause: this.#socketError,
            },
          );
        this.#reason = reason;
        this.#rejectAll(reason);
        resolve(this.#closedByClient ? undefined : reason);
      });
    });
    socket.on("error", (error) => {
      this.#socketError = error;
    });
    socket.on("data", (chunk: Buffer) => {
      // A plain view rather than the Buffer subclass, so `bin` fields reach callers as Uint8Array.
      this.#onData(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    });
  }

  /** Requests waiting for a response. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** Whether the connection has ended or been marked unusable. */
  get isClosed(): boolean {
    return this.#reason !== undefined;
  }

  /**
   * Settles when the connection has ended: with `undefined` after {@link close}, otherwise with
   * the {@link SidecarUnavailableError} that ended it. Never rejects, so a supervisor can simply
   * await it to learn that its sidecar is gone.
   */
  closed(): Promise<Error | undefined> {
    return this.#closed;
  }

  /** Backend and device, and that the sidecar is answering. */
  async health(options?: CallOptions): Promise<HealthResult> {
    return parseHealth(await this.#request("health", {}, options));
  }

  /**
   * Loads the model in directory `path` under the name `model`. Loading reads all the weights,
   * so consider a `timeoutMs` above the default. A simulated model (`backend: "sim"`) needs no
   * `path`; given one, it only reads the directory's tokenizer so token counts are real.
   */
  async load(model: string, path: string | undefined, options?: LoadOptions): Promise<LoadResult> {
    const fields = {
      model,
      path,
      backend: options?.backend,
      sim: options?.sim === undefined ? undefined : simFields(options.sim),
      openai: options?.openai === undefined ? undefined : openAiFields(options.openai),
      gguf_weights: options?.ggufWeights,
      dtype: options?.dtype,
      threads: options?.threads,
    };
    return parseLoad(await this.#request("load", fields, options));
  }

  /**
   * Loads the PEFT LoRA adapter in directory `path` (`adapter_config.json`,
   * `adapter_model.safetensors`) for the resident generator `model`, under the name
   * `adapter` that `generate` requests then give. The sidecar checks it against the model.
   */
  async loadAdapter(
    model: string,
    adapter: string,
    path: string,
    options?: CallOptions,
  ): Promise<AdapterLoadResult> {
    return parseAdapterLoad(await this.#request("load_adapter", { model, adapter, path }, options));
  }

  /** Forgets an adapter; sequences already running with it finish with it. */
  async unloadAdapter(model: string, adapter: string, options?: CallOptions): Promise<void> {
    await this.#request("unload_adapter", { model, adapter }, options);
  }

  /** Unloads a resident model once its in-flight batches have finished. */
  async unload(model: string, options?: CallOptions): Promise<UnloadResult> {
    return parseUnload(await this.#request("unload", { model }, options));
  }

  /** Runs one batch of inputs through an embedding model. */
  async embed(request: EmbedRequest): Promise<EmbedResult> {
    const body = await this.#request(
      "embed",
      {
        model: request.model,
        inputs: request.inputs,
        truncate: request.truncate,
        traceparents: request.traceparents,
      },
      request,
    );
    return parseEmbed(body, request.inputs.length);
  }

  /** Relevance of each (query, document) pair to a cross-encoder (`rerank`) model. */
  async score(request: ScoreRequest): Promise<ScoreResult> {
    if (request.queries.length !== request.documents.length) {
      throw new RangeError(
        `sidecar client: score needs as many documents as queries (${request.documents.length} vs ${request.queries.length})`,
      );
    }
    const body = await this.#request(
      "score",
      {
        model: request.model,
        queries: request.queries,
        documents: request.documents,
        truncate: request.truncate,
        traceparents: request.traceparents,
      },
      request,
    );
    return parseScore(body, request.queries.length);
  }

  /** Label probabilities per input from a sequence-classification (`classify`) model. */
  async classify(request: TextsRequest): Promise<ClassifyResult> {
    const body = await this.#request("classify", textsFields(request), request);
    return parseClassify(body, request.inputs.length);
  }

  /** Entities per input from a token-classification (`extract`) model. */
  async extract(request: TextsRequest): Promise<ExtractResult> {
    const body = await this.#request("extract", textsFields(request), request);
    return parseExtract(body, request.inputs.length);
  }

  /**
   * Starts one sequence on a `generate` model and returns at once: iterate the result for its
   * token events as the sidecar produces them, and await its `done` for the totals. Many
   * sequences may be in flight at once; the sidecar decodes them together.
   *
   * @throws RangeError when both or neither of `prompt` and `messages` are given.
   */
  generate(request: GenerateRequest): Generation {
    if ((request.prompt === undefined) === (request.messages === undefined)) {
      throw new RangeError("sidecar client: generate needs exactly one of prompt and messages");
    }
    let generation: Generation | undefined;
    const done = this.#request("generate", generateFields(request), request, (id) => {
      generation = new Generation(id, (target) => this.cancel(target));
      return (body) => {
        generation?.pushTokens(parseTokens(body));
      };
    });
    // #request allocates the id synchronously, before any frame can arrive.
    const started = generation ?? new Generation(0, () => Promise.resolve(false));
    done.then(
      (body) => {
        try {
          started.finish(parseDone(body));
        } catch (error) {
          started.fail(error as Error);
        }
      },
      (error: unknown) => {
        started.fail(error as Error);
      },
    );
    return started;
  }

  /**
   * Cancels the `generate` request `target` on this connection. Resolves false when it had
   * already finished; its stream then ends with `finish_reason: "cancelled"`.
   */
  async cancel(target: number, options?: CallOptions): Promise<boolean> {
    const body = await this.#request("cancel", { target }, options);
    return new Fields(body, "cancel response").boolean("cancelled");
  }

  /** Uptime and per-model counters. */
  async stats(options?: CallOptions): Promise<StatsResult> {
    return parseStats(await this.#request("stats", {}, options));
  }

  /**
   * Closes the connection. Requests still in flight fail with {@link SidecarUnavailableError};
   * a caller shutting down gracefully awaits its requests first.
   */
  async close(): Promise<void> {
    if (this.#reason === undefined) {
      this.#closedByClient = true;
      this.#reason = new SidecarUnavailableError("the sidecar client was closed");
      this.#rejectAll(this.#reason);
      this.#socket.destroy();
    }
    await this.#closed;
  }

  /**
   * Sends one request. `streamed`, given for `generate`, is called with the request's id
   * before the frame is written and returns the handler for its `tokens` events.
   */
  #request(
    op: string,
    fields: Record<string, unknown>,
    options: CallOptions | undefined,
    streamed?: (id: number) => (body: FrameBody) => void,
  ): Promise<FrameBody> {
    return new Promise((resolve, reject) => {
      if (this.#reason !== undefined) {
        reject(this.#reason);
        return;
      }
      const timeoutMs =
        options?.timeoutMs === undefined
          ? this.#options.requestTimeoutMs
          : checkTimeout("timeoutMs", options.timeoutMs);
      const id = this.#allocateId();
      const frame = encodeFrame({ ...fields, id, op, traceparent: options?.traceparent });
      const bodyBytes = frame.byteLength - FRAME_HEADER_BYTES;
      if (bodyBytes > this.#options.maxFrameBytes) {
        reject(new FrameTooLargeError(bodyBytes, this.#options.maxFrameBytes));
        return;
      }
      const startTimer = (): NodeJS.Timeout =>
        setTimeout(() => {
          this.#pending.delete(id);
          reject(new SidecarTimeoutError(op, timeoutMs));
        }, timeoutMs);
      const onTokens = streamed?.(id);
      this.#pending.set(id, {
        op,
        resolve,
        reject,
        timer: startTimer(),
        stream: onTokens === undefined ? undefined : { onTokens, restartTimer: startTimer },
      });
      this.#socket.write(frame);
    });
  }

  #allocateId(): number {
    // Ids only need to be unique among requests in flight; wrapping keeps them within u32.
    do {
      const id = this.#nextId;
      this.#nextId = id === MAX_ID ? 1 : id + 1;
      if (!this.#pending.has(id)) return id;
    } while (this.#pending.size < MAX_ID);
    throw new RangeError("sidecar client: no free request id");
  }

  #onData(chunk: Uint8Array): void {
    if (this.#reason !== undefined) return;
    this.#decoder.push(chunk);
    try {
      for (const body of this.#decoder.frames()) {
        this.#onResponse(body);
        if (this.isClosed) return;
      }
    } catch (error) {
      this.#fail(error instanceof Error ? error : new SidecarProtocolError(String(error)));
    }
  }

  #onResponse(body: FrameBody): void {
    let envelope;
    try {
      envelope = parseEnvelope(body);
    } catch (error) {
      const pending = typeof body.id === "number" ? this.#settle(body.id) : undefined;
      // A broken envelope we can pin on one request fails that request; one we cannot pin on any
      // means we no longer know which answer is whose, so the connection is given up.
      if (pending === undefined) throw error;
      pending.reject(error as Error);
      return;
    }
    if (envelope.id === 0) {
      // Id 0 is never ours: the sidecar could not read some frame of ours at all.
      this.#fail(envelope.ok ? new SidecarProtocolError("response with id 0") : envelope.error);
      return;
    }
    if (envelope.ok && envelope.body.event === "tokens") {
      // A stream's intermediate event: the request stays pending.
      const streaming = this.#pending.get(envelope.id);
      if (streaming?.stream === undefined) return;
      clearTimeout(streaming.timer);
      streaming.timer = streaming.stream.restartTimer();
      try {
        streaming.stream.onTokens(envelope.body);
      } catch (error) {
        this.#settle(envelope.id)?.reject(error as Error);
      }
      return;
    }
    // An unknown id is the late answer to a request that already timed out.
    const pending = this.#settle(envelope.id);
    if (pending === undefined) return;
    if (envelope.ok) pending.resolve(envelope.body);
    else pending.reject(envelope.error);
  }

  #settle(id: number): Pending | undefined {
    const pending = this.#pending.get(id);
    if (pending === undefined) return undefined;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    return pending;
  }

  #fail(cause: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = new SidecarUnavailableError(`sidecar connection abandoned: ${cause.message}`, {
      cause,
    });
    this.#rejectAll(this.#reason);
    this.#socket.destroy();
  }

  #rejectAll(reason: Error): void {
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      pending.reject(reason);
    }
  }
}
