import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  headers as natsHeaders,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import {
  AnnotateResponseSchema,
  ErrorCode,
  WorkRequestSchema,
  type AnnotateResponse,
  type WorkRequest,
} from "@shoal/proto";
import { ANNOTATE_SUBJECT, ANNOTATOR_QUEUE } from "@shoal/jetstream";
import { extractContext, injectContext, natsHeaderCarrier, type Logger } from "@shoal/telemetry";
import type { Annotate } from "./annotator.js";

/**
 * Serves annotation over core NATS request/reply in the `annotator` queue group, so any number
 * of annotator processes share the load. Malformed requests get an error reply, never a crash.
 */
export function serveAnnotations(
  nc: NatsConnection,
  annotator: Annotate,
  logger: Logger,
): Subscription {
  return nc.subscribe(ANNOTATE_SUBJECT, {
    queue: ANNOTATOR_QUEUE,
    callback: (err, msg) => {
      if (err !== null) {
        logger.error({ err }, "annotate subscription failed");
        return;
      }
      const reply = (response: AnnotateResponse): void => {
        msg.respond(toBinary(AnnotateResponseSchema, response));
      };
      let request: WorkRequest;
      try {
        request = fromBinary(WorkRequestSchema, msg.data);
      } catch (cause) {
        logger.warn({ err: cause }, "malformed annotate request");
        reply(
          create(AnnotateResponseSchema, {
            error: { code: ErrorCode.INVALID_ARGUMENT, message: "malformed work request" },
          }),
        );
        return;
      }
      const ctx = extractContext(natsHeaderCarrier(msg.headers));
      annotator.annotate(request, ctx).then(reply, (cause: unknown) => {
        logger.error({ err: cause, request_id: request.requestId }, "annotate failed");
        reply(
          create(AnnotateResponseSchema, {
            error: { code: ErrorCode.UNAVAILABLE, message: "work queue unavailable" },
          }),
        );
      });
    },
  });
}

export interface RemoteAnnotatorOptions {
  readonly nc: NatsConnection;
  /** @default 5000 */
  readonly timeoutMs?: number;
}

/** The ingress side of `serveAnnotations`: the same contract as an in-process Annotator. */
export class RemoteAnnotator implements Annotate {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;

  constructor(options: RemoteAnnotatorOptions) {
    this.#nc = options.nc;
    this.#timeoutMs = options.timeoutMs ?? 5000;
  }

  async annotate(request: WorkRequest, ctx: Context): Promise<AnnotateResponse> {
    const hdrs = natsHeaders();
    injectContext(ctx, natsHeaderCarrier(hdrs));
    const msg = await this.#nc.request(ANNOTATE_SUBJECT, toBinary(WorkRequestSchema, request), {
      timeout: this.#timeoutMs,
      headers: hdrs,
    });
    return fromBinary(AnnotateResponseSchema, msg.data);
  }
}
