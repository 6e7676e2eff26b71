import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { Tracer } from "@opentelemetry/api";
import type { Gateway, StreamGateway } from "@shoal/gateway";
import {
  InferenceService,
  ListModelsResponseSchema,
  ModelFamily,
  type EmbedRequest,
  type EmbedResponse,
  type ListModelsResponse,
} from "@shoal/proto";
import type { ModelFamily as CatalogFamily } from "@shoal/config";
import type { Logger } from "@shoal/telemetry";
import type { Principal } from "@shoal/tenants";
import { asRequestError, toConnectError } from "../error-table.js";
import { serverTiming } from "../server-timing.js";
import { traced } from "../traced.js";
import { generate } from "./generate-handler.js";
import { extractHandler, score } from "./heads-handlers.js";
import { callOptions, connectCall } from "./call-options.js";
import { CALLER } from "./caller-key.js";
import { embedResponse } from "./embed-response.js";
import { answersInBinary } from "./packed-floats.js";
import type { IngressMetrics } from "../metrics.js";

export interface ConnectContext {
  readonly gateway: Gateway;
  readonly streams: StreamGateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
}

const FAMILIES: Readonly<Record<CatalogFamily, ModelFamily>> = {
  embedding: ModelFamily.EMBEDDING,
  reranker: ModelFamily.RERANKER,
  "token-classifier": ModelFamily.TOKEN_CLASSIFIER,
  "sequence-classifier": ModelFamily.SEQUENCE_CLASSIFIER,
  generator: ModelFamily.GENERATOR,
};

/**
 * `shoal.inference.v1.InferenceService` over Connect, gRPC and gRPC-Web at once. The client's
 * deadline (`grpc-timeout` / `connect-timeout-ms`) becomes the work item's deadline. Methods of
 * families the sidecar cannot run yet are left out, so clients get UNIMPLEMENTED for them.
 */
export function inferenceRoutes(cc: ConnectContext): (router: ConnectRouter) => void {
  return (router) => {
    router.service(InferenceService, {
      embed: (req, ctx) => embed(cc, req, ctx),
      generate: (req, ctx) => generate(cc, req, ctx),
      score: (req, ctx) => score(cc, req, ctx),
      extract: (req, ctx) => extractHandler(cc, req, ctx),
      listModels: (_req, ctx) => Promise.resolve(listModels(cc, ctx.values.get(CALLER))),
    });
  };
}

async function embed(
  cc: ConnectContext,
  req: EmbedRequest,
  ctx: HandlerContext,
): Promise<EmbedResponse> {
  try {
    const outcome = await traced(
      cc,
      "ingress.Embed",
      {
        get: (name) => ctx.requestHeader.get(name) ?? undefined,
        set: () => undefined,
      },
      { "rpc.method": "Embed", "shoal.model": req.model, "shoal.inputs": req.inputs.length },
      (traceCtx) =>
        cc.gateway.embed(
          {
            model: req.model,
            inputs: req.inputs,
            promptName: req.promptName,
            ...callOptions(req, connectCall(ctx)),
          },
          traceCtx,
        ),
    );
    ctx.responseHeader.set("server-timing", serverTiming(outcome.timings));
    ctx.responseHeader.set("x-request-id", outcome.requestId);
    return embedResponse(outcome, answersInBinary(ctx.requestHeader.get("content-type")));
  } catch (err) {
    const error = asRequestError(err);
    if (error.kind === "internal") cc.logger.error({ err }, "Embed failed");
    throw toConnectError(error);
  }
}

function listModels(cc: ConnectContext, caller: Principal | undefined): ListModelsResponse {
  const catalog = cc.gateway.catalog;
  const access = cc.gateway.access(caller);
  const models = access.models().map((m) => ({
    id: m.id,
    family: FAMILIES[m.family],
    dimensions: m.dimensions,
    maxInputTokens: m.maxInputTokens,
  }));
  // Each published adapter is listed as `base:name`, shaped like its base.
  const adapters = cc.streams.visibleAdapters(access).flatMap((a) => {
    const base = catalog.find(a.base);
    return base === undefined
      ? []
      : [
          {
            id: a.model,
            family: FAMILIES[base.family],
            dimensions: base.dimensions,
            maxInputTokens: base.maxInputTokens,
          },
        ];
  });
  return create(ListModelsResponseSchema, { models: [...models, ...adapters] });
}
