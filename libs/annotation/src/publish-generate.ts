import { create, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Context } from "@opentelemetry/api";
import type { ModelEntry } from "@shoal/config";
import { Headers, workSubject } from "@shoal/jetstream";
import {
  AnnotateResponseSchema,
  WorkItemSchema,
  type AnnotateResponse,
  type GenerateTask,
  type WorkRequest,
} from "@shoal/proto";
import { injectContext, natsHeaderCarrier, wallClockUs } from "@shoal/telemetry";
import { generateCost, withModelDefaultLength } from "./generate-cost.js";
import { lengthBucket } from "./plan.js";
import type { TokenCounter } from "./token-counter.js";

export interface PublishGenerateOptions {
  readonly js: JetStreamClient;
  readonly model: ModelEntry;
  readonly counter: TokenCounter;
  /** Length-bucket edges below the model's context; the context closes the list. */
  readonly bucketEdges: readonly number[];
  readonly publishTimeoutMs: number;
}

/**
 * Queues a generation as one work item: its `n` sequences run on one worker, which streams
 * them back together. The item is bucketed by prompt length, and its cost is the bound
 * `n × (prompt + max_tokens)` a worker plans its sequence capacity with.
 */
export async function publishGenerate(
  request: WorkRequest,
  task: GenerateTask,
  ctx: Context,
  o: PublishGenerateOptions,
): Promise<AnnotateResponse> {
  const queued = withModelDefaultLength(task, o.model.serving?.maxNewTokens);
  const cost = generateCost(queued, o.counter);
  const edges = [
    ...o.bucketEdges.filter((e) => e < o.model.maxInputTokens),
    o.model.maxInputTokens,
  ];
  const item = create(WorkItemSchema, {
    requestId: request.requestId,
    part: 0,
    parts: 1,
    model: o.model.id,
    priority: request.priority,
    deadlineUnixMs: request.deadlineUnixMs,
    replySubject: request.replySubject,
    enqueuedUnixUs: BigInt(wallClockUs()),
    maxInputTokens: Math.min(cost.promptTokens, o.model.maxInputTokens),
    totalTokens: cost.totalTokens,
    task: { case: "generate", value: queued },
  });
  const hdrs = natsHeaders();
  hdrs.set(Headers.requestId, request.requestId);
  injectContext(ctx, natsHeaderCarrier(hdrs));
  await o.js.publish(
    workSubject(o.model.key, lengthBucket(cost.promptTokens, edges)),
    toBinary(WorkItemSchema, item),
    { msgID: `${request.requestId}:0`, headers: hdrs, timeout: o.publishTimeoutMs },
  );
  return create(AnnotateResponseSchema, { parts: 1, estimatedTokens: cost.totalTokens });
}
