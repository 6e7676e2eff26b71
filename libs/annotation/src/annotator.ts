import { existsSync } from "node:fs";
import { join } from "node:path";
import { setImmediate } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { context, SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import {
  AnnotateResponseSchema,
  ErrorCode,
  WorkItemSchema,
  type AnnotateResponse,
  type WorkRequest,
} from "@shoal/proto";
import type { Catalog, ModelEntry } from "@shoal/config";
import { PublishRefusedError, workSubject, type StreamPublisher } from "@shoal/jetstream";
import { injectContext, traceFieldsCarrier, wallClockUs, type Logger } from "@shoal/telemetry";
import type { Backlog } from "./backlog.js";
import type { AnnotatedFamily, PlanContext, TaskCase } from "./family.js";
import { classifyFamily } from "./families/classify.js";
import { embedFamily } from "./families/embed.js";
import { extractFamily } from "./families/extract.js";
import { generateFamily } from "./families/generate.js";
import { scoreFamily } from "./families/score.js";
import { lengthBucket } from "./plan.js";
import { ShapeEstimates, type ShapeEstimate } from "./shape-estimate.js";
import { readVocabSize } from "./vocab.js";
import { WorkBundler } from "./work-bundler.js";

export interface AnnotatorOptions {
  readonly catalog: Catalog;
  /** Stores work items in the work stream. */
  readonly publisher: StreamPublisher;
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
   * Largest sum of input bytes one queued part may carry, so every work item fits a NATS
   * message whatever its texts' token counts. @default 262144
   */
  readonly partMaxBytes?: number;
  /**
   * Length-bucket edges in tokens for models whose catalog entry (or config bundle) sets none;
   * the model's maximum closes the list. @default [16, 32, 64, 128, 256, 512]
   */
  readonly bucketEdges?: readonly number[];
  /** Per-model queue bounds; without it only the stream's own limits apply. */
  readonly backlog?: Backlog;
  /**
   * Told of every work item stored in the work stream, with its model key and length bucket
   * (the arrivals metrics count them).
   */
  readonly onQueued?: (modelKey: string, bucket: number) => void;
}

/** Something that turns an accepted request into queued work. */
export interface Annotate {
  annotate(request: WorkRequest, ctx: Context): Promise<AnnotateResponse>;
  /** The model's calibrated token estimate, which answers teach its exact counts. */
  estimate(modelId: string): ShapeEstimate;
}

const FAMILIES: { readonly [C in TaskCase]: AnnotatedFamily<C> } = {
  embed: embedFamily,
  score: scoreFamily,
  classify: classifyFamily,
  extract: extractFamily,
  generate: generateFamily,
};

/**
 * The gateway's annotate-and-queue stage: looks at a request's shape, estimates each input's
 * tokens without tokenizing (the sidecar's one real tokenization calibrates the estimate),
 * cuts the request into parts that each fit one batch and one NATS message, assigns each a
 * length bucket and stores them in the work stream. The families (./families) say how their
 * task is cut; this file knows none of them.
 */
export class Annotator implements Annotate {
  readonly #options: Required<Omit<AnnotatorOptions, "backlog" | "onQueued">> &
    Pick<AnnotatorOptions, "backlog" | "onQueued">;
  readonly #estimates = new ShapeEstimates();
  readonly #vocabSizes = new Map<string, Promise<number | undefined>>();
  readonly #bundler: WorkBundler;

  constructor(options: AnnotatorOptions) {
    this.#options = {
      ...options,
      partMaxPaddedTokens: options.partMaxPaddedTokens ?? 8192,
      partMaxInputs: options.partMaxInputs ?? 64,
      partMaxBytes: options.partMaxBytes ?? 256 * 1024,
      bucketEdges: options.bucketEdges ?? [16, 32, 64, 128, 256, 512],
    };
    // A message of several items keeps to a part's limits, so it still fits one batch.
    this.#bundler = new WorkBundler(options.publisher, {
      maxInputs: this.#options.partMaxInputs,
      maxPaddedTokens: this.#options.partMaxPaddedTokens,
      maxBytes: this.#options.partMaxBytes,
    });
  }

  estimate(modelId: string): ShapeEstimate {
    return this.#estimates.of(modelId);
  }

  /**
   * Reads the vocabulary size of every catalog model whose files are on this machine, for
   * requests that send token ids, and resolves with how many it read. Parsing a
   * `tokenizer.json` takes milliseconds of CPU on the event loop every request shares, so it is
   * done at start, one per event-loop turn, rather than on the first such request.
   */
  async preloadVocabularies(): Promise<number> {
    let loaded = 0;
    for (const model of this.#options.catalog.models) {
      if (model.weights === "gguf" || !existsSync(join(model.dir, "tokenizer.json"))) continue;
      if ((await this.#vocabSize(model)) !== undefined) loaded++;
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
    const backlog = this.#options.backlog;
    if (backlog?.full(model.key) === true) {
      return failure(
        ErrorCode.RESOURCE_EXHAUSTED,
        `model "${model.id}" has ${backlog.queued(model.key)} items queued (limit ${backlog.limit}); retry shortly`,
      );
    }
    const task = request.task;
    if (task.case === undefined) {
      return failure(ErrorCode.INVALID_ARGUMENT, "request carries no task");
    }
    const family = FAMILIES[task.case] as AnnotatedFamily;
    const plan = await family.plan(task.value, this.#planContext(model));
    if ("error" in plan) return failure(plan.error.code, plan.error.message);
    const enqueued = BigInt(wallClockUs());
    const edges = [
      ...(model.serving?.bucketEdges ?? this.#options.bucketEdges).filter(
        (e) => e < model.maxInputTokens,
      ),
      model.maxInputTokens,
    ];
    const buckets = plan.parts.map((part) => lengthBucket(part.maxInputTokens, edges));
    const published = await Promise.allSettled(
      plan.parts.map((part, index) => {
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
          task: part.task,
        });
        injectContext(ctx, traceFieldsCarrier(item));
        return this.#bundler.queue(
          workSubject(model.key, buckets[index] ?? model.maxInputTokens),
          item,
          task.case === "generate",
        );
      }),
    );
    const { onQueued } = this.#options;
    if (onQueued !== undefined) {
      published.forEach((r, index) => {
        if (r.status === "fulfilled") onQueued(model.key, buckets[index] ?? model.maxInputTokens);
      });
    }
    const refused = published.find((r) => r.status === "rejected");
    if (refused !== undefined) {
      // Parts stored before the refusal still run; their answers find no held request at the
      // gateway and are dropped.
      if (refused.reason instanceof PublishRefusedError && refused.reason.streamFull) {
        return failure(ErrorCode.RESOURCE_EXHAUSTED, "the work queue is full; retry shortly");
      }
      throw refused.reason;
    }
    return create(AnnotateResponseSchema, {
      parts: plan.parts.length,
      estimatedTokens: plan.estimatedTokens,
    });
  }

  #planContext(model: ModelEntry): PlanContext {
    return {
      model,
      estimate: this.#estimates.of(model.id),
      limits: {
        maxInputTokens: model.maxInputTokens,
        maxPaddedTokens: this.#options.partMaxPaddedTokens,
        maxInputs: this.#options.partMaxInputs,
        maxBytes: this.#options.partMaxBytes,
      },
      vocabSize: () => this.#vocabSize(model),
    };
  }

  /** The model's vocabulary size, or undefined while its files are not on this machine. */
  #vocabSize(model: ModelEntry): Promise<number | undefined> {
    let size = this.#vocabSizes.get(model.id);
    if (size === undefined) {
      size = readVocabSize(model.dir).catch((err: unknown) => {
        this.#options.logger.warn({ model: model.id, err }, "vocabulary unavailable");
        // Not kept: the files may arrive once a worker has fetched the model.
        this.#vocabSizes.delete(model.id);
        return undefined;
      });
      this.#vocabSizes.set(model.id, size);
    }
    return size;
  }
}

function failure(code: ErrorCode, message: string): AnnotateResponse {
  return create(AnnotateResponseSchema, { error: { code, message } });
}
