import type { Tracer } from "@opentelemetry/api";
import type { Gateway, StreamGateway } from "@shoal/gateway";
import type { Principal } from "@shoal/tenants";
import { httpHeaderCarrier, type Logger } from "@shoal/telemetry";
import { asRequestError } from "../error-table.js";
import { serverTiming } from "../server-timing.js";
import { countRefused, traced } from "../traced.js";
import { readRequest, type HttpRequest } from "./body.js";
import { chatCompletions, completions } from "./generation-routes.js";
import { extractRoute, rerankRoute } from "./heads-routes.js";
import { embeddingsResponse, outputWidth, parseEmbeddingsRequest } from "./openai-embeddings.js";
import { responseFormat, sendBody, sendError, type HttpResponse } from "./respond.js";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";
import type { IngressMetrics } from "../metrics.js";
import type { EdgeAuth } from "../edge-auth.js";

export interface RestContext {
  readonly gateway: Gateway;
  /** Streamed generation (chat and completions). */
  readonly streams: StreamGateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
  /** @default 8 MiB */
  readonly maxBodyBytes: number;
  readonly auth: EdgeAuth;
}

/** `caller`: whom the request acts for, once its key checked out (none on an open cluster). */
type Handler = (
  req: HttpRequest,
  res: HttpResponse,
  rc: RestContext,
  caller: Principal | undefined,
) => Promise<void>;

/** The REST surface: OpenAI-compatible routes. */
const ROUTES: Readonly<Record<string, Readonly<Record<string, Handler>>>> = {
  "/v1/embeddings": { POST: embeddings },
  "/v1/models": { GET: listModels },
  "/v1/chat/completions": { POST: chatCompletions },
  "/v1/completions": { POST: completions },
  "/v1/rerank": { POST: rerankRoute },
  "/v1/extract": { POST: extractRoute },
};

/** True when `path` belongs to the REST surface (everything else goes to Connect). */
export function isRestPath(path: string): boolean {
  return path.startsWith("/v1/");
}

/** Dispatches one REST request; every failure becomes an error body, never a crash. */
export async function handleRest(
  req: HttpRequest,
  res: HttpResponse,
  rc: RestContext,
): Promise<void> {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const methods = ROUTES[path];
  const route = methods === undefined ? "unknown" : path.slice("/v1/".length).replaceAll("/", "_");
  try {
    if (methods === undefined) throw new NotFoundRoute(path);
    const handler = methods[req.method ?? ""];
    if (handler === undefined) {
      rc.metrics?.refused(route, "method_not_allowed");
      sendBody(
        res,
        405,
        errorBody(`${req.method ?? ""} is not allowed on ${path}`, "invalid_request_error"),
        {
          allow: Object.keys(methods).join(", "),
        },
      );
      return;
    }
    // Before the body is read: a request without a valid key costs nothing more.
    const caller = rc.auth.principal(req.headers.authorization, path);
    await handler(req, res, rc, caller);
  } catch (err) {
    if (err instanceof NotFoundRoute) {
      rc.metrics?.refused(route, "not_found");
      sendBody(res, 404, errorBody(err.message, "invalid_request_error"));
      return;
    }
    countRefused(rc, route, err);
    const error = asRequestError(err);
    if (error.kind === "internal") rc.logger.error({ err, path }, "request failed");
    if (error.kind === "payload_too_large" && req.httpVersionMajor === 1) {
      // The unread rest of the body would be parsed as the next request on this connection.
      res.setHeader("connection", "close");
    }
    sendError(res, error);
  }
}

async function embeddings(
  req: HttpRequest,
  res: HttpResponse,
  rc: RestContext,
  caller: Principal | undefined,
): Promise<void> {
  const request = parseEmbeddingsRequest(await readRequest(req, rc.maxBodyBytes));
  const model = rc.gateway.access(caller).model(request.call.model);
  const width = outputWidth(model, request.dimensions);
  const outcome = await traced(
    rc,
    "ingress.embeddings",
    httpHeaderCarrier(req.headers),
    {
      "http.route": "/v1/embeddings",
      "shoal.model": model.id,
      "shoal.inputs": request.call.inputs.length,
    },
    (ctx) =>
      rc.gateway.embed(
        {
          ...request.call,
          noWait: wantsNoWait(req.headers[NO_WAIT_HEADER]),
          caller,
        },
        ctx,
      ),
  );
  // MessagePack carries the float32 bytes themselves unless the client asked for base64.
  const encoding =
    request.encodingFormat === "base64"
      ? "base64"
      : responseFormat(res) === "msgpack"
        ? "binary"
        : "float";
  sendBody(res, 200, embeddingsResponse(outcome, encoding, width), {
    "server-timing": serverTiming(outcome.timings),
    "x-request-id": outcome.requestId,
  });
}

async function listModels(
  _req: HttpRequest,
  res: HttpResponse,
  rc: RestContext,
  caller: Principal | undefined,
): Promise<void> {
  await Promise.resolve();
  const access = rc.gateway.access(caller);
  sendBody(res, 200, {
    object: "list",
    data: [
      ...access.models().map((m) => ({
        id: m.id,
        object: "model",
        created: 0,
        owned_by: "shoal",
      })),
      // An adapter is a model of its own to an OpenAI client: `base:name`, owned by the
      // tenant that published it, with its base as OpenAI's `parent`.
      ...rc.streams.visibleAdapters(access).map((a) => ({
        id: a.model,
        object: "model",
        created: a.created,
        owned_by: a.owner,
        parent: a.base,
      })),
    ],
  });
}

function errorBody(message: string, type: string): unknown {
  return { error: { message, type, param: null, code: null } };
}

class NotFoundRoute extends Error {
  override readonly name = "NotFoundRoute";
  constructor(path: string) {
    super(`no route ${path}; see GET /v1/models and POST /v1/embeddings`);
  }
}
