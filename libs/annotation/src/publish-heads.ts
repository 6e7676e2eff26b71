import { create, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Context } from "@opentelemetry/api";
import type { ModelEntry } from "@shoal/config";
import { Headers, workSubject } from "@shoal/jetstream";
import {
  AnnotateResponseSchema,
  ErrorCode,
  WorkItemSchema,
  type AnnotateResponse,
  type WorkRequest,
} from "@shoal/proto";
import { wallClockUs, injectContext, natsHeaderCarrier } from "@shoal/telemetry";
import { lengthBucket, planParts } from "./plan.js";
import type { TokenCounter } from "./token-counter.js";

export interface PublishHeadsOptions {
  readonly js: JetStreamClient;
  readonly model: ModelEntry;
  readonly counter: TokenCounter;
  readonly partMaxPaddedTokens: number;
  readonly partMaxInputs: number;
  readonly bucketEdges: readonly number[];
  readonly publishTimeoutMs: number;
}

type HeadTask = Extract<WorkRequest["task"], { case: "score" | "classify" | "extract" }>;

/**
 * Cost of a (query, document) pair to a cross-encoder: `[CLS] query [SEP] document [SEP]`,
 * i.e. both texts' counts (each with its own `[CLS]`/`[SEP]`) less the one `[CLS]` shared.
 */
export function pairTokens(counter: TokenCounter, query: string, document: string): number {
  return counter.count(query) + counter.count(document) - 1;
}

/**
 * Queues a rerank, classify or extract request the way embeddings are queued: its inputs
 * (documents, for rerank) counted, cut into parts that fit one batch, bucketed by length.
 */
export async function publishHeads(
  request: WorkRequest,
  task: HeadTask,
  ctx: Context,
  o: PublishHeadsOptions,
): Promise<AnnotateResponse> {
  const texts = task.case === "score" ? task.value.documents : task.value.inputs;
  const counts =
    task.case === "score"
      ? texts.map((d) => pairTokens(o.counter, task.value.query, d))
      : texts.map((t) => o.counter.count(t));
  const plan = planParts(counts, {
    maxInputTokens: o.model.maxInputTokens,
    maxPaddedTokens: o.partMaxPaddedTokens,
    maxInputs: o.partMaxInputs,
  });
  const first = plan.overLength[0];
  if (!task.value.truncate && first !== undefined && o.counter.kind === "exact") {
    return create(AnnotateResponseSchema, {
      error: {
        code: ErrorCode.INVALID_ARGUMENT,
        message: `${task.case === "score" ? "document" : "input"} ${first} is longer than the model's ${o.model.maxInputTokens} tokens and truncate is false`,
      },
    });
  }
  const enqueued = BigInt(wallClockUs());
  const edges = [
    ...o.bucketEdges.filter((e) => e < o.model.maxInputTokens),
    o.model.maxInputTokens,
  ];
  await Promise.all(
    plan.parts.map(async (part, index) => {
      const slice = texts.slice(part.firstInput, part.firstInput + part.inputs);
      const item = create(WorkItemSchema, {
        requestId: request.requestId,
        part: index,
        parts: plan.parts.length,
        model: o.model.id,
        priority: request.priority,
        deadlineUnixMs: request.deadlineUnixMs,
        replySubject: request.replySubject,
        enqueuedUnixUs: enqueued,
        firstInput: part.firstInput,
        maxInputTokens: part.maxInputTokens,
        totalTokens: part.totalTokens,
        task:
          task.case === "score"
            ? {
                case: "score",
                value: { query: task.value.query, documents: slice, truncate: task.value.truncate },
              }
            : { case: task.case, value: { inputs: slice, truncate: task.value.truncate } },
      });
      const hdrs = natsHeaders();
      hdrs.set(Headers.requestId, request.requestId);
      injectContext(ctx, natsHeaderCarrier(hdrs));
      await o.js.publish(
        workSubject(o.model.key, lengthBucket(part.maxInputTokens, edges)),
        toBinary(WorkItemSchema, item),
        {
          msgID: `${request.requestId}:${index}`,
          headers: hdrs,
          timeout: o.publishTimeoutMs,
        },
      );
    }),
  );
  return create(AnnotateResponseSchema, {
    parts: plan.parts.length,
    estimatedTokens: plan.totalTokens,
  });
}
