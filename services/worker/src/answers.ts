import { create, toBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import { Headers } from "@shoal/jetstream";
import {
  WorkResultSchema,
  type ErrorCode,
  type EmbedResult,
  type Timings,
  type WorkItem,
} from "@shoal/proto";
import { injectContext, natsHeaderCarrier } from "@shoal/telemetry";

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
  outcome:
    | { case: "embed"; value: EmbedResult }
    | { case: "error"; code: ErrorCode; message: string },
  timings?: Timings,
): void {
  const result = create(WorkResultSchema, {
    requestId: item.requestId,
    part: item.part,
    workerId,
    timings,
    outcome:
      outcome.case === "embed"
        ? outcome
        : { case: "error", value: { code: outcome.code, message: outcome.message } },
  });
  const hdrs = natsHeaders();
  hdrs.set(Headers.requestId, item.requestId);
  injectContext(ctx, natsHeaderCarrier(hdrs));
  nc.publish(item.replySubject, toBinary(WorkResultSchema, result), { headers: hdrs });
}
