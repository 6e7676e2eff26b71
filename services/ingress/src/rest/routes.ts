import type { Tracer } from "@opentelemetry/api";
import { InvalidArgumentError, ModelNotFoundError, type Gateway } from "@shoal/gateway";
import type { Logger } from "@shoal/telemetry";
import { asRequestError } from "../error-table.js";
import { serverTiming } from "../server-timing.js";
import { traced } from "../traced.js";
import { parseJson, readBody, type HttpRequest } from "./body.js";
import { embeddingsResponse, parseEmbeddingsRequest } from "./openai-embeddings.js";
import { sendError, sendJson, type HttpResponse } from "./respond.js";

export interface RestContext {
  readonly gateway: Gateway;
  readonly tracer: Tracer;
  readonly logger: Logger;
  /** @default 8 MiB */
  readonly maxBodyBytes: number;
}

type Handler = (req: HttpRequest, res: HttpResponse, rc: RestContext) => Promise<void>;

/** The REST surface: OpenAI-compatible routes. */
const ROUTES: Readonly<Record<string, Readonly<Record<string, Handler>>>> = {
  "/v1/embeddings": { POST: embeddings },
  "/v1/models": { GET: listModels },
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
  try {
    if (methods === undefined) throw new NotFoundRoute(path);
    const handler = methods[req.method ?? ""];
    if (handler === undefined) {
      sendJson(
        res,
        405,
        errorBody(`${req.method ?? ""} is not allowed on ${path}`, "invalid_request_error"),
        {
          allow: Object.keys(methods).join(", "),
        },
      );
      return;
    }
    await handler(req, res, rc);
  } catch (err) {
    if (err instanceof NotFoundRoute) {
      sendJson(res, 404, errorBody(err.message, "invalid_request_error"));
      return;
    }
    const error = asRequestError(err);
    if (error.kind === "internal") rc.logger.error({ err, path }, "request failed");
    if (error.kind === "payload_too_large" && req.httpVersionMajor === 1) {
      // The unread rest of the body would be parsed as the next request on this connection.
      res.setHeader("connection", "close");
    }
    sendError(res, error);
  }
}

async function embeddings(req: HttpRequest, res: HttpResponse, rc: RestContext): Promise<void> {
  const request = parseEmbeddingsRequest(parseJson(await readBody(req, rc.maxBodyBytes)));
  const model = rc.gateway.catalog.find(request.call.model);
  if (model === undefined) {
    throw new ModelNotFoundError(
      request.call.model,
      rc.gateway.catalog.models.map((m) => m.id),
    );
  }
  if (request.dimensions !== undefined && request.dimensions !== model.dimensions) {
    throw new InvalidArgumentError(
      `model "${model.id}" produces ${model.dimensions} dimensions; \`dimensions\` must be ${model.dimensions} or absent`,
    );
  }
  const outcome = await traced(
    rc.tracer,
    "ingress.embeddings",
    headerCarrier(req),
    {
      "http.route": "/v1/embeddings",
      "shoal.model": model.id,
      "shoal.inputs": request.call.inputs.length,
    },
    (ctx) => rc.gateway.embed(request.call, ctx),
  );
  sendJson(res, 200, embeddingsResponse(outcome, request.encodingFormat), {
    "server-timing": serverTiming(outcome.timings),
    "x-request-id": outcome.requestId,
  });
}

async function listModels(_req: HttpRequest, res: HttpResponse, rc: RestContext): Promise<void> {
  await Promise.resolve();
  sendJson(res, 200, {
    object: "list",
    data: rc.gateway.catalog.models.map((m) => ({
      id: m.id,
      object: "model",
      created: 0,
      owned_by: "shoal",
    })),
  });
}

function headerCarrier(req: HttpRequest): { get(name: string): string | undefined; set(): void } {
  return {
    get: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    set: () => undefined,
  };
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
