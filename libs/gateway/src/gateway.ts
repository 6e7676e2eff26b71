import { randomUUID } from "node:crypto";
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import {
  Priority,
  WorkRequestSchema,
  WorkResultsSchema,
  type WorkRequest,
  type WorkResult,
} from "@shoal/proto";
import type { Annotate } from "@shoal/annotation";
import type { Catalog, ModelEntry } from "@shoal/config";
import { replySubject } from "@shoal/jetstream";
import type { ResidencyView } from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import {
  DeadlineExceededError,
  InternalError,
  UnavailableError,
  type RequestError,
} from "./errors.js";
import type { BlobOffload, StoredBlob } from "./offload.js";
import { admit, requestTimeoutMs, subscribeAnswers } from "./admission.js";
import { PendingRequests, type Assembled, type Held } from "./pending.js";
import { validateEmbed, validateTokenInputs, type EmbedLimits } from "./validate.js";
import { fromWorkError } from "./work-errors.js";
import { refuseUnlessResident } from "./no-wait.js";

/** Inputs of one answered request that calibrate the model's token estimate. */
const CALIBRATION_INPUTS = 32;

export interface GatewayOptions {
  readonly nc: NatsConnection;
  readonly annotator: Annotate;
  readonly catalog: Catalog;
  readonly logger: Logger;
  /** Names this process's reply subject. @default a random id */
  readonly ingressId?: string;
  /** Deadline for requests whose client set none. @default 30000 */
  readonly defaultTimeoutMs?: number;
  /** Longest deadline a client may ask for. @default 300000 */
  readonly maxTimeoutMs?: number;
  /** Requests held at once; past it new ones are refused with RESOURCE_EXHAUSTED. @default 10000 */
  readonly maxPending?: number;
  readonly limits?: Partial<EmbedLimits>;
  /** Stores inputs too large for the queue; without it they are refused by `maxInputChars`. */
  readonly offload?: BlobOffload;
  /** Where models are resident, for `noWait` calls; without it they wait like any other. */
  readonly residency?: ResidencyView;
}

export interface EmbedCall {
  readonly model: string;
  readonly inputs: readonly string[];
  /**
   * Inputs as token ids of the model's tokenizer, in place of `inputs` (which is then empty);
   * the annotator checks them against the vocabulary.
   */
  readonly tokenInputs?: readonly (readonly number[])[];
  /** @default true */
  readonly truncate?: boolean;
  readonly priority?: Priority;
  /** Time the client allows, from its own deadline; clamped to `maxTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Refuse at once, with a retry hint, when no copy of the model is resident. */
  readonly noWait?: boolean;
}

/** Where one request's time went, in microseconds. Parts run in parallel: the slowest counts. */
export interface RequestTimings {
  readonly annotateUs: number;
  readonly queueUs: number;
  readonly batchUs: number;
  readonly computeUs: number;
  readonly totalUs: number;
}

export interface EmbedOutcome {
  readonly requestId: string;
  readonly model: ModelEntry;
  readonly dim: number;
  /** `inputs × dim` float32 little-endian, in input order. */
  readonly embeddings: Uint8Array;
  readonly tokens: readonly number[];
  readonly truncated: readonly boolean[];
  readonly timings: RequestTimings;
}

/**
 * The ingress side of the pipeline: validates a request, annotates and queues it (in this
 * process), holds it until every part is answered on this process's reply subject, and
 * reassembles the answer. Waiting is a promise per request, so no request blocks another.
 */
export class Gateway {
  readonly #options: GatewayOptions;
  readonly #pending = new PendingRequests();
  readonly #replySubject: string;
  readonly #limits: EmbedLimits;
  #subscription: Subscription | undefined;

  private constructor(options: GatewayOptions) {
    this.#options = options;
    this.#replySubject = replySubject(options.ingressId ?? randomUUID().replaceAll("-", ""));
    this.#limits = {
      maxInputs: options.limits?.maxInputs ?? 2048,
      maxInputChars: options.limits?.maxInputChars ?? 1_000_000,
    };
  }

  /** Subscribes to the reply subject before any request can be queued. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const gateway = new Gateway(options);
    gateway.#subscription = await subscribeAnswers(
      options.nc,
      gateway.#replySubject,
      options.logger,
      (data) => {
        gateway.#onReply(data);
      },
    );
    return gateway;
  }

  get catalog(): Catalog {
    return this.#options.catalog;
  }

  /** Requests held right now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Answers dropped because their part had already been answered (redeliveries). */
  get duplicateAnswers(): number {
    return this.#pending.duplicates;
  }

  async embed(call: EmbedCall, ctx: Context): Promise<EmbedOutcome> {
    const started = performance.now();
    const tokenInputs = call.tokenInputs ?? [];
    const offload = this.#options.offload;
    // Anything too large for the queue goes to the blob store, so no input size between the
    // two limits is refused while larger ones pass.
    const oversized = call.inputs.map(
      (text) =>
        offload !== undefined &&
        (text.length > this.#limits.maxInputChars ||
          Buffer.byteLength(text) > offload.thresholdBytes),
    );
    const model =
      tokenInputs.length > 0
        ? validateTokenInputs(this.#options.catalog, call.model, tokenInputs, this.#limits)
        : validateEmbed(
            this.#options.catalog,
            call.model,
            call.inputs,
            this.#limits,
            (i) => oversized[i] === true,
          );
    refuseUnlessResident(this.#options.nc, this.#options.residency, model, call.noWait);
    admit(this.#pending.size, this.#options.maxPending ?? 10_000, "requests");
    const timeoutMs = requestTimeoutMs(call.timeoutMs, this.#options);
    const blobs =
      offload === undefined ? [] : await storeOversized(offload, call.inputs, oversized, ctx);
    try {
      return await this.#embedQueued(call, model, tokenInputs, blobs, timeoutMs, started, ctx);
    } finally {
      if (offload !== undefined && blobs.length > 0) offload.remove(blobs.map((b) => b.name));
    }
  }

  async #embedQueued(
    call: EmbedCall,
    model: ModelEntry,
    tokenInputs: readonly (readonly number[])[],
    blobs: readonly (StoredBlob & { readonly input: number })[],
    timeoutMs: number,
    started: number,
    ctx: Context,
  ): Promise<EmbedOutcome> {
    const offloaded = new Set(blobs.map((b) => b.input));
    const requestId = randomUUID();
    const request = create(WorkRequestSchema, {
      requestId,
      model: model.id,
      priority: call.priority ?? Priority.NORMAL,
      deadlineUnixMs: BigInt(Date.now() + timeoutMs),
      replySubject: this.#replySubject,
      task: {
        case: "embed",
        value: {
          inputs: call.inputs.map((text, i) => (offloaded.has(i) ? "" : text)),
          truncate: call.truncate ?? true,
          tokenInputs: tokenInputs.map((ids) => ({ ids: [...ids] })),
          blobs: blobs.map((b) => ({ ...b, size: BigInt(b.size) })),
        },
      },
    });
    const held = this.#pending.hold(
      requestId,
      timeoutMs,
      () => new DeadlineExceededError(`no answer within ${timeoutMs} ms`),
    );
    await this.#queue(request, held, ctx);
    const annotated = performance.now();
    const assembled = await held.answer;
    const tokens = assembled.parts.flatMap((p) => p.tokens);
    const truncated = assembled.parts.flatMap((p) => p.truncated);
    if (tokenInputs.length === 0) {
      // The sidecar's exact counts calibrate the estimate the next requests are queued by. A
      // few inputs a request are plenty for a moving fit, and keep a bulk request from
      // scanning all its text a second time on the way out.
      const estimate = this.#options.annotator.estimate(model.id);
      const observed = Math.min(call.inputs.length, CALIBRATION_INPUTS);
      for (let i = 0; i < observed; i++) {
        if (offloaded.has(i)) continue;
        estimate.observe(call.inputs[i] ?? "", tokens[i] ?? 0, truncated[i] === true);
      }
    }
    const dim = assembled.parts[0]?.dim ?? model.dimensions;
    const slowest = (
      pick: (t: NonNullable<(typeof assembled.timings)[number]>) => number,
    ): number => Math.max(0, ...assembled.timings.map((t) => (t === undefined ? 0 : pick(t))));
    return {
      requestId,
      model,
      dim,
      embeddings: concat(assembled.parts.map((p) => p.embeddings)),
      tokens,
      truncated,
      timings: {
        annotateUs: Math.round((annotated - started) * 1000),
        queueUs: slowest((t) => t.queueUs),
        batchUs: slowest((t) => t.batchUs),
        computeUs: slowest((t) => t.computeUs),
        totalUs: Math.round((performance.now() - started) * 1000),
      },
    };
  }

  /**
   * Queues a task the caller has validated (rerank, classify, extract: see `heads.ts`) and
   * waits for every part's outcome, in part order.
   */
  async submit(
    model: ModelEntry,
    task: MessageInitShape<typeof WorkRequestSchema>["task"],
    call: { readonly priority?: Priority; readonly timeoutMs?: number; readonly noWait?: boolean },
    ctx: Context,
  ): Promise<{ requestId: string; assembled: Assembled }> {
    refuseUnlessResident(this.#options.nc, this.#options.residency, model, call.noWait);
    admit(this.#pending.size, this.#options.maxPending ?? 10_000, "requests");
    const timeoutMs = requestTimeoutMs(call.timeoutMs, this.#options);
    const requestId = randomUUID();
    const request = create(WorkRequestSchema, {
      requestId,
      model: model.id,
      priority: call.priority ?? Priority.NORMAL,
      deadlineUnixMs: BigInt(Date.now() + timeoutMs),
      replySubject: this.#replySubject,
      task,
    });
    const held = this.#pending.hold(
      requestId,
      timeoutMs,
      () => new DeadlineExceededError(`no answer within ${timeoutMs} ms`),
    );
    await this.#queue(request, held, ctx);
    return { requestId, assembled: await held.answer };
  }

  /**
   * Annotates and queues the request. Failures end the held request, so the caller's one await
   * on the answer sees every outcome.
   */
  async #queue(request: WorkRequest, held: Held, ctx: Context): Promise<void> {
    try {
      const annotation = await this.#options.annotator.annotate(request, ctx);
      if (annotation.error === undefined) held.expect(annotation.parts);
      else this.#pending.fail(request.requestId, fromWorkError(annotation.error));
    } catch (cause) {
      this.#options.logger.error(
        { err: cause, request_id: request.requestId },
        "annotation failed",
      );
      this.#pending.fail(
        request.requestId,
        new UnavailableError("work queue unavailable", { cause }),
      );
    }
  }

  /** Stops taking answers and fails what is still held. */
  async close(): Promise<void> {
    this.#subscription?.unsubscribe();
    this.#pending.failAll(() => new UnavailableError("ingress is shutting down"));
    await Promise.resolve();
  }

  /** A worker's answers for this ingress from one batch (`WorkResults`), settled in turn. */
  #onReply(data: Uint8Array): void {
    let results: readonly WorkResult[];
    try {
      results = fromBinary(WorkResultsSchema, data).results;
    } catch (err) {
      this.#options.logger.warn({ err }, "malformed work results dropped");
      return;
    }
    for (const result of results) this.#pending.settle(result, resultError);
  }
}

/** The error a worker's result carries, if it is one. */
function resultError(r: WorkResult): RequestError | undefined {
  if (r.outcome.case === "error") return fromWorkError(r.outcome.value);
  if (r.outcome.case === undefined) return new InternalError("worker sent an empty result");
  return undefined;
}

/** Stores every oversized input; if one fails, those already stored are removed again. */
async function storeOversized(
  offload: BlobOffload,
  inputs: readonly string[],
  oversized: readonly boolean[],
  ctx: Context,
): Promise<(StoredBlob & { readonly input: number })[]> {
  const stored: (StoredBlob & { readonly input: number })[] = [];
  try {
    for (const [input, text] of inputs.entries()) {
      if (oversized[input] !== true) continue;
      stored.push({ input, ...(await offload.put(Buffer.from(text, "utf8"), ctx)) });
    }
  } catch (err) {
    offload.remove(stored.map((b) => b.name));
    throw err;
  }
  return stored;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
