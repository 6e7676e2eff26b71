import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { Tracer } from "@opentelemetry/api";
import { extract, rerank, type Gateway } from "@shoal/gateway";
import {
  ExtractResponseSchema,
  ScoreResponseSchema,
  type ExtractRequest,
  type ExtractResponse,
  type ScoreRequest,
  type ScoreResponse,
} from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { asRequestError, toConnectError } from "../error-table.js";
import { traced } from "../traced.js";
import { callOptions, connectCall } from "./call-options.js";
import type { IngressMetrics } from "../metrics.js";

export interface HeadsHandlerContext {
  readonly gateway: Gateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
}

function carrier(ctx: HandlerContext): { get(name: string): string | undefined; set(): void } {
  return { get: (name) => ctx.requestHeader.get(name) ?? undefined, set: () => undefined };
}

function rethrow(hc: HeadsHandlerContext, method: string, err: unknown): never {
  const error = asRequestError(err);
  if (error.kind === "internal") hc.logger.error({ err }, `${method} failed`);
  throw toConnectError(error);
}

/** `Score`: one relevance score per document, in document order. */
export async function score(
  hc: HeadsHandlerContext,
  req: ScoreRequest,
  ctx: HandlerContext,
): Promise<ScoreResponse> {
  try {
    const outcome = await traced(
      hc,
      "ingress.Score",
      carrier(ctx),
      { "rpc.method": "Score", "shoal.model": req.model, "shoal.inputs": req.documents.length },
      (traceCtx) =>
        rerank(
          hc.gateway,
          {
            model: req.model,
            query: req.query,
            documents: req.documents,
            ...callOptions(req, connectCall(ctx)),
          },
          traceCtx,
        ),
    );
    ctx.responseHeader.set("x-request-id", outcome.requestId);
    return create(ScoreResponseSchema, {
      model: outcome.model.id,
      scores: [...outcome.scores],
      usage: { inputTokens: outcome.tokens.reduce((n, t) => n + t, 0) },
    });
  } catch (err) {
    return rethrow(hc, "Score", err);
  }
}

/** `Extract`: entities (token classifiers) or labels (sequence classifiers) per input. */
export async function extractHandler(
  hc: HeadsHandlerContext,
  req: ExtractRequest,
  ctx: HandlerContext,
): Promise<ExtractResponse> {
  try {
    const outcome = await traced(
      hc,
      "ingress.Extract",
      carrier(ctx),
      { "rpc.method": "Extract", "shoal.model": req.model, "shoal.inputs": req.inputs.length },
      (traceCtx) =>
        extract(
          hc.gateway,
          {
            model: req.model,
            inputs: req.inputs,
            ...callOptions(req, connectCall(ctx)),
          },
          traceCtx,
        ),
    );
    ctx.responseHeader.set("x-request-id", outcome.requestId);
    return create(ExtractResponseSchema, {
      model: outcome.model.id,
      results: outcome.results.map((r) => ({ entities: [...r.entities], labels: [...r.labels] })),
      usage: { inputTokens: outcome.tokens.reduce((n, t) => n + t, 0) },
    });
  } catch (err) {
    return rethrow(hc, "Extract", err);
  }
}
