import { create, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import { Headers } from "@shoal/jetstream";
import {
  WorkResultSchema,
  type ErrorCode,
  type ClassifyResult,
  type EmbedResult,
  type ExtractResult,
  type ScoreResult,
  type Timings,
  type WorkItem,
} from "@shoal/proto";
import { injectContext, natsHeaderCarrier } from "@shoal/telemetry";

/** A part's answer: its result (embeddings, scores, labels, entities) or an error. */
export type AnswerOutcome =
  | { case: "embed"; value: EmbedResult }
  | { case: "score"; value: ScoreResult }
  | { case: "classify"; value: ClassifyResult }
  | { case: "extract"; value: ExtractResult }
  | { case: "error"; code: ErrorCode; message: string };

/**
 * Publishes a part's answer to the ingress holding its request. Core NATS publish is
 * fire-and-forget; callers flush the connection before acking, so an ack always follows an
 * answer that reached the server.
 */
export function publishAnswer(
  nc: NatsConnection,
  workerId: string,
  item: WorkItem,
  ctx: Context,
  outcome: AnswerOutcome,
  timings?: Timings,
): void {
  const result = create(WorkResultSchema, {
    requestId: item.requestId,
    part: item.part,
    workerId,
    timings,
    outcome:
      outcome.case === "error"
        ? { case: "error", value: { code: outcome.code, message: outcome.message } }
        : outcome,
  });
  const hdrs = natsHeaders();
  hdrs.set(Headers.requestId, item.requestId);
  injectContext(ctx, natsHeaderCarrier(hdrs));
  nc.publish(item.replySubject, toBinary(WorkResultSchema, result), { headers: hdrs });
}
