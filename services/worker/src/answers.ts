import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  WorkResultsSchema,
  type ErrorCode,
  type ClassifyResult,
  type EmbedResult,
  type ExtractResult,
  type ScoreResult,
  type Timings,
  type WorkItem,
  type WorkResultSchema,
} from "@shoal/proto";

/** A part's answer: its result (embeddings, scores, labels, entities) or an error. */
export type AnswerOutcome =
  | { case: "embed"; value: EmbedResult }
  | { case: "score"; value: ScoreResult }
  | { case: "classify"; value: ClassifyResult }
  | { case: "extract"; value: ExtractResult }
  | { case: "error"; code: ErrorCode; message: string };

/** One part's answer, for the ingress that holds its request. */
export interface Answer {
  readonly item: WorkItem;
  readonly outcome: AnswerOutcome;
  readonly timings?: Timings | undefined;
}

/**
 * Publishes answers, one message per ingress (`WorkResults` on its reply subject) however many
 * of its requests they answer: a batch of many small requests costs one NATS message per
 * ingress rather than one per request. Core NATS publish is fire-and-forget; callers flush the
 * connection before acking, so an ack always follows an answer that reached the server.
 */
export function publishAnswers(
  nc: NatsConnection,
  workerId: string,
  answers: readonly Answer[],
): void {
  const bySubject = new Map<string, MessageInitShape<typeof WorkResultSchema>[]>();
  for (const { item, outcome, timings } of answers) {
    const result: MessageInitShape<typeof WorkResultSchema> = {
      requestId: item.requestId,
      part: item.part,
      workerId,
      timings,
      outcome:
        outcome.case === "error"
          ? { case: "error", value: { code: outcome.code, message: outcome.message } }
          : outcome,
    };
    const results = bySubject.get(item.replySubject);
    if (results === undefined) bySubject.set(item.replySubject, [result]);
    else results.push(result);
  }
  for (const [subject, results] of bySubject) {
    nc.publish(subject, toBinary(WorkResultsSchema, create(WorkResultsSchema, { results })));
  }
}

/** The same error for every item, one message per ingress, as {@link publishAnswers} sends. */
export function publishErrors(
  nc: NatsConnection,
  workerId: string,
  items: readonly WorkItem[],
  code: ErrorCode,
  message: string,
): void {
  publishAnswers(
    nc,
    workerId,
    items.map((item) => ({ item, outcome: { case: "error", code, message } })),
  );
}
