import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { Tracer } from "@opentelemetry/api";
import type { GenerateCall, GenerationFinish, StreamGateway } from "@shoal/gateway";
import {
  FinishReason,
  GenerateResponseSchema,
  type GenerateRequest,
  type GenerateResponse,
} from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { asRequestError, toConnectError } from "../error-table.js";
import { traced } from "../traced.js";
import { CALLER } from "./caller-key.js";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";
import type { IngressMetrics } from "../metrics.js";

export interface GenerateHandlerContext {
  readonly streams: StreamGateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
}

const FINISH: Readonly<Record<GenerationFinish, FinishReason>> = {
  stop: FinishReason.STOP,
  length: FinishReason.LENGTH,
  cancelled: FinishReason.CANCELLED,
};

/** The proto request as the gateway's call; the client's deadline bounds the time to start. */
export function generateCall(req: GenerateRequest, timeoutMs: number | undefined): GenerateCall {
  const s = req.sampling;
  const input =
    req.input.case === "chat"
      ? { messages: req.input.value.messages.map((m) => ({ role: m.role, content: m.content })) }
      : req.input.case === "prompt"
        ? { prompt: req.input.value }
        : {};
  return {
    model: req.model,
    ...input,
    n: req.n,
    maxTokens: s?.maxTokens,
    temperature: s?.temperature,
    topP: s?.topP,
    topK: s?.topK,
    minP: s?.minP,
    repetitionPenalty: s?.repetitionPenalty,
    seed: s?.seed === undefined ? undefined : Number(s.seed),
    stop: s === undefined || s.stop.length === 0 ? undefined : s.stop,
    priority: req.priority,
    timeoutMs,
  };
}

/**
 * `Generate` as a server stream: one message per event, in the order produced. The handler
 * takes the next event only after the previous message was sent, so a slow gRPC reader holds
 * the worker back through the gateway's credit; a client that cancels (or whose deadline
 * passes) aborts the handler's signal, which cancels the generation in the sidecar.
 */
export async function* generate(
  gc: GenerateHandlerContext,
  req: GenerateRequest,
  ctx: HandlerContext,
): AsyncGenerator<GenerateResponse> {
  let started;
  try {
    started = await traced(
      gc,
      "ingress.Generate",
      { get: (name) => ctx.requestHeader.get(name) ?? undefined, set: () => undefined },
      { "rpc.method": "Generate", "shoal.model": req.model },
      (traceCtx) =>
        gc.streams.generate(
          {
            ...generateCall(req, ctx.timeoutMs()),
            noWait: wantsNoWait(ctx.requestHeader.get(NO_WAIT_HEADER)),
            caller: ctx.values.get(CALLER),
          },
          traceCtx,
          ctx.signal,
        ),
    );
  } catch (err) {
    throw connectError(gc, err);
  }
  const stream = started.stream;
  const onAbort = (): void => {
    stream.cancel();
  };
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  ctx.responseHeader.set("x-request-id", started.requestId);
  try {
    for await (const event of stream) {
      yield event.kind === "tokens"
        ? create(GenerateResponseSchema, { index: event.index, delta: event.text })
        : create(GenerateResponseSchema, {
            index: event.index,
            finishReason: FINISH[event.finishReason],
            usage: { inputTokens: event.promptTokens, outputTokens: event.completionTokens },
          });
    }
  } catch (err) {
    throw connectError(gc, err);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    // The client stopped reading (the generator was returned early): stop the generation too.
    stream.cancel();
  }
}

function connectError(gc: GenerateHandlerContext, err: unknown): Error {
  const error = asRequestError(err);
  if (error.kind === "internal") gc.logger.error({ err }, "Generate failed");
  return toConnectError(error);
}
