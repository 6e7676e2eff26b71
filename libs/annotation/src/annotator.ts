import { existsSync } from "node:fs";
import { join } from "node:path";
import { setImmediate } from "node:timers/promises";
import { create, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { JetStreamApiError, type JetStreamClient } from "@nats-io/jetstream";
import { context, SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import {
  AnnotateResponseSchema,
  ErrorCode,
  WorkItemSchema,
  type AnnotateResponse,
  type WorkRequest,
} from "@shoal/proto";
import type { Catalog, ModelEntry } from "@shoal/config";
import { Headers, workSubject } from "@shoal/jetstream";
import { injectContext, natsHeaderCarrier, wallClockUs, type Logger } from "@shoal/telemetry";
import { estimatingTokenCounter, loadTokenCounter, type TokenCounter } from "./token-counter.js";
import type { Backlog } from "./backlog.js";
import { lengthBucket, planParts } from "./plan.js";
import { publishGenerate } from "./publish-generate.js";
import { publishHeads } from "./publish-heads.js";
import { decodeTokenInputs } from "./token-inputs.js";

export interface AnnotatorOptions {
  readonly catalog: Catalog;
  readonly js: JetStreamClient;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /**
   * Largest `inputs × longest input` one queued part may carry, so any part fits one batch.
   * @default 8192
   */
  readonly partMaxPaddedTokens?: number;
  /** @default 64 */
  readonly partMaxInputs?: number;
  /**
   * Length-bucket edges in tokens for models whose catalog entry (or config bundle) sets none;
   * the model's maximum closes the list. @default [16, 32, 64, 128, 256, 512]
   */
  readonly bucketEdges?: readonly number[];
  /** How long to wait for JetStream to store a part. @default 5000 */
  readonly publishTimeoutMs?: number;
  /** Per-model queue bounds; without it only the stream's own limits apply. */
  readonly backlog?: Backlog;
}

/** Something that turns an accepted request into queued work: in process, or over NATS. */
export interface Annotate {
  annotate(request: WorkRequest, ctx: Context): Promise<AnnotateResponse>;
}

/**
 * Looks at a request's shape, counts tokens per input with the model's tokenizer, cuts the
 * request into parts that each fit one batch, assigns each a length bucket and publishes them
 * to the work stream. It never waits on compute, so it scales out horizontally.
 */
export class Annotator implements Annotate {
  readonly #options: Required<Omit<AnnotatorOptions, "backlog">> &
    Pick<AnnotatorOptions, "backlog">;
  readonly #counters = new Map<string, Promise<TokenCounter>>();

  constructor(options: AnnotatorOptions) {
    this.#options = {
      ...options,
      partMaxPaddedTokens: options.partMaxPaddedTokens ?? 8192,
      partMaxInputs: options.partMaxInputs ?? 64,
      bucketEdges: options.bucketEdges ?? [16, 32, 64, 128, 256, 512],
      publishTimeoutMs: options.publishTimeoutMs ?? 5000,
    };
  }

  /**
   * Loads the tokenizer of every catalog model whose files are already on this machine, and
   * resolves with how many it loaded. Parsing a tokenizer takes tens of milliseconds of CPU on
   * the event loop every request shares, so without this the first request for each model
   * stalls the requests of all the others. Models not fetched yet load on first use.
   */
  async preloadTokenizers(): Promise<number> {
    let loaded = 0;
    for (const model of this.#options.catalog.models) {
      if (model.weights === "gguf" || !existsSync(join(model.dir, "tokenizer.json"))) continue;
      if ((await this.#counter(model)).kind === "exact") loaded++;
      // One tokenizer per turn of the event loop, so requests already arriving are not held.
      await setImmediate();
    }
    return loaded;
  }

  async annotate(request: WorkRequest, parent: Context): Promise<AnnotateResponse> {
    const span = this.#options.tracer.startSpan(
      "annotate",
      { attributes: { "shoal.request_id": request.requestId, "shoal.model": request.model } },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    try {
      const response = await context.with(ctx, () => this.#annotate(request, ctx));
      if (response.error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: response.error.message });
      }
      span.setAttribute("shoal.parts", response.parts);
      span.setAttribute("shoal.estimated_tokens", response.estimatedTokens);
      return response;
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  }

  async #annotate(request: WorkRequest, ctx: Context): Promise<AnnotateResponse> {
    const model = this.#options.catalog.find(request.model);
    if (model === undefined) {
      return failure(ErrorCode.NOT_FOUND, `model "${request.model}" is not served here`);
    }
    if (this.#options.backlog?.full(model.key) === true) {
      return failure(
        ErrorCode.RESOURCE_EXHAUSTED,
        `model "${model.id}" has ${this.#options.backlog.queued(model.key)} items queued (limit ${this.#options.backlog.limit}); retry shortly`,
      );
    }
    if (request.task.case === "generate") {
      const options = { js: this.#options.js, model, counter: await this.#counter(model) };
      return publishGenerate(request, request.task.value, ctx, {
        ...options,
        bucketEdges: this.#bucketEdges(model),
        publishTimeoutMs: this.#options.publishTimeoutMs,
      }).catch((err: unknown) => {
        if (isStreamFull(err)) {
          return failure(ErrorCode.RESOURCE_EXHAUSTED, "the work queue is full; retry shortly");
        }
        throw err;
      });
    }
    if (
      request.task.case === "score" ||
      request.task.case === "classify" ||
      request.task.case === "extract"
    ) {
      return publishHeads(request, request.task, ctx, {
        js: this.#options.js,
        model,
        counter: await this.#counter(model),
        partMaxPaddedTokens: this.#options.partMaxPaddedTokens,
        partMaxInputs: this.#options.partMaxInputs,
        bucketEdges: this.#bucketEdges(model),
        publishTimeoutMs: this.#options.publishTimeoutMs,
      }).catch((err: unknown) => {
        if (isStreamFull(err)) {
          return failure(ErrorCode.RESOURCE_EXHAUSTED, "the work queue is full; retry shortly");
        }
        throw err;
      });
    }
    if (request.task.case !== "embed") {
      return failure(ErrorCode.INVALID_ARGUMENT, "request carries no task");
    }
    const { truncate, tokenInputs, blobs } = request.task.value;
    const counter = await this.#counter(model);
    let inputs = request.task.value.inputs;
    if (tokenInputs.length > 0) {
      const decoded = decodeTokenInputs(tokenInputs, counter, model.id);
      if ("error" in decoded) return failure(ErrorCode.INVALID_ARGUMENT, decoded.error);
      inputs = decoded.texts;
    }
    // An offloaded input is not here to count: its size gives an estimate, which only sets its
    // batch cost (it is at the model's maximum for any text over the offload threshold).
    const blobSizes = new Map(blobs.map((b) => [b.input, Number(b.size)]));
    const plan = planParts(
      inputs.map((text, i) => {
        const size = blobSizes.get(i);
        return size === undefined ? counter.count(text) : 2 + Math.ceil(size / 4);
      }),
      {
        maxInputTokens: model.maxInputTokens,
        maxPaddedTokens: this.#options.partMaxPaddedTokens,
        maxInputs: this.#options.partMaxInputs,
      },
    );
    // An estimate can only reject what is certainly too long; exact counts reject precisely.
    const first = plan.overLength.find((i) => !blobSizes.has(i));
    if (!truncate && first !== undefined && counter.kind === "exact") {
      return failure(
        ErrorCode.INVALID_ARGUMENT,
        `input ${first} is longer than the model's ${model.maxInputTokens} tokens and truncate is false`,
      );
    }
    const enqueued = BigInt(wallClockUs());
    const edges = [
      ...this.#bucketEdges(model).filter((e) => e < model.maxInputTokens),
      model.maxInputTokens,
    ];
    const published = await Promise.allSettled(
      plan.parts.map(async (part, index) => {
        const item = create(WorkItemSchema, {
          requestId: request.requestId,
          part: index,
          parts: plan.parts.length,
          model: model.id,
          priority: request.priority,
          deadlineUnixMs: request.deadlineUnixMs,
          replySubject: request.replySubject,
          enqueuedUnixUs: enqueued,
          firstInput: part.firstInput,
          maxInputTokens: part.maxInputTokens,
          totalTokens: part.totalTokens,
          task: {
            case: "embed",
            value: {
              inputs: inputs.slice(part.firstInput, part.firstInput + part.inputs),
              truncate,
              blobs: blobs
                .filter(
                  (b) => b.input >= part.firstInput && b.input < part.firstInput + part.inputs,
                )
                .map((b) => ({ ...b, input: b.input - part.firstInput })),
            },
          },
        });
        const hdrs = natsHeaders();
        hdrs.set(Headers.requestId, request.requestId);
        injectContext(ctx, natsHeaderCarrier(hdrs));
        await this.#options.js.publish(
          workSubject(model.key, lengthBucket(part.maxInputTokens, edges)),
          toBinary(WorkItemSchema, item),
          {
            msgID: `${request.requestId}:${index}`,
            headers: hdrs,
            timeout: this.#options.publishTimeoutMs,
          },
        );
      }),
    );
    const refused = published.find((r) => r.status === "rejected");
    if (refused !== undefined) {
      if (isStreamFull(refused.reason)) {
        return failure(ErrorCode.RESOURCE_EXHAUSTED, "the work queue is full; retry shortly");
      }
      throw refused.reason;
    }
    return create(AnnotateResponseSchema, {
      parts: plan.parts.length,
      estimatedTokens: plan.totalTokens,
    });
  }

  /** The model's own bucket edges (tuned per hardware in its bundle), else the annotator's. */
  #bucketEdges(model: ModelEntry): readonly number[] {
    return model.serving?.bucketEdges ?? this.#options.bucketEdges;
  }

  #counter(model: ModelEntry): Promise<TokenCounter> {
    let counter = this.#counters.get(model.id);
    if (counter === undefined && model.weights === "gguf") {
      // A GGUF model's tokenizer lives in the weights file's metadata, which the annotator does
      // not parse; the estimate only picks a length bucket, and the sidecar counts exactly
      // (refusing `input_too_long` against the real context).
      counter = Promise.resolve(estimatingTokenCounter());
      this.#counters.set(model.id, counter);
    }
    if (counter === undefined) {
      counter = loadTokenCounter(model.dir).catch((err: unknown) => {
        this.#options.logger.warn(
          { model: model.id, err },
          "tokenizer unavailable; estimating token counts",
        );
        return estimatingTokenCounter();
      });
      this.#counters.set(model.id, counter);
    }
    return counter;
  }
}

/**
 * The work stream discards new messages at its byte or count limit; the client should back off,
 * which is what RESOURCE_EXHAUSTED/429 tells it. Parts stored before the refusal still run;
 * their answers find no held request at ingress and are dropped.
 */
function isStreamFull(err: unknown): boolean {
  return err instanceof JetStreamApiError && /maximum (bytes|messages)/i.test(err.message);
}

function failure(code: ErrorCode, message: string): AnnotateResponse {
  return create(AnnotateResponseSchema, { error: { code, message } });
}
