import type { Tracer } from "@opentelemetry/api";
import { extract, InvalidArgumentError, rerank, type Gateway } from "@shoal/gateway";
import type { Logger } from "@shoal/telemetry";
import type { Principal } from "@shoal/tenants";
import { traced } from "../traced.js";
import { readRequest, type HttpRequest } from "./body.js";
import { sendBody, type HttpResponse } from "./respond.js";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";
import type { IngressMetrics } from "../metrics.js";

export interface HeadsRouteContext {
  readonly gateway: Gateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
}

type Body = Record<string, unknown>;

function asBody(raw: unknown): Body {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || raw instanceof Uint8Array) {
    throw new InvalidArgumentError("request body must be an object");
  }
  return raw as Body;
}

function model(b: Body): string {
  const value = b["model"];
  if (typeof value !== "string" || value === "") {
    throw new InvalidArgumentError("`model` is required and must be a string");
  }
  return value;
}

function truncate(b: Body): boolean {
  const value = b["truncate"] ?? true;
  if (typeof value !== "boolean") throw new InvalidArgumentError("`truncate` must be a boolean");
  return value;
}

/** Cohere and Jina accept documents as strings or as `{text}` objects. */
function documents(value: unknown): string[] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError("`documents` is required and must be an array");
  return value.map((d, i) => {
    if (typeof d === "string") return d;
    const text = typeof d === "object" && d !== null ? (d as Body)["text"] : undefined;
    if (typeof text !== "string") {
      throw new InvalidArgumentError(
        `documents[${i}] must be a string or an object with a string \`text\``,
      );
    }
    return text;
  });
}

function headers(req: HttpRequest): { get(name: string): string | undefined; set(): void } {
  return {
    get: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    set: () => undefined,
  };
}

/**
 * `POST /v1/rerank` in the Cohere/Jina shape: `query`, `documents`, optional `top_n` and
 * `return_documents`; results sorted by relevance, highest first, each with the document's
 * `index` in the request.
 */
export async function rerankRoute(
  req: HttpRequest,
  res: HttpResponse,
  rc: HeadsRouteContext,
  caller: Principal | undefined,
): Promise<void> {
  const b = asBody(await readRequest(req, rc.maxBodyBytes));
  const query = b["query"];
  if (typeof query !== "string")
    throw new InvalidArgumentError("`query` is required and must be a string");
  const docs = documents(b["documents"]);
  const topN = b["top_n"] ?? Math.max(1, docs.length);
  if (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1) {
    throw new InvalidArgumentError("`top_n` must be a positive integer");
  }
  const returnDocuments = b["return_documents"] ?? false;
  if (typeof returnDocuments !== "boolean") {
    throw new InvalidArgumentError("`return_documents` must be a boolean");
  }
  const call = {
    model: model(b),
    query,
    documents: docs,
    truncate: truncate(b),
    noWait: wantsNoWait(req.headers[NO_WAIT_HEADER]),
    caller,
  };
  const outcome = await traced(
    rc,
    "ingress.rerank",
    headers(req),
    { "http.route": "/v1/rerank", "shoal.model": call.model, "shoal.inputs": docs.length },
    (ctx) => rerank(rc.gateway, call, ctx),
  );
  const ranked = outcome.scores
    .map((score, index) => ({ index, score }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, topN);
  const tokens = outcome.tokens.reduce((n, t) => n + t, 0);
  sendBody(
    res,
    200,
    {
      id: outcome.requestId,
      model: outcome.model.id,
      results: ranked.map((r) => ({
        index: r.index,
        relevance_score: r.score,
        ...(returnDocuments ? { document: { text: docs[r.index] } } : {}),
      })),
      usage: { total_tokens: tokens },
    },
    { "x-request-id": outcome.requestId },
  );
}

/**
 * `POST /v1/extract`: entities (NER models) or labels (classifiers) for each input, in the
 * order given; `input` is a string or an array of strings, as for embeddings.
 */
export async function extractRoute(
  req: HttpRequest,
  res: HttpResponse,
  rc: HeadsRouteContext,
  caller: Principal | undefined,
): Promise<void> {
  const b = asBody(await readRequest(req, rc.maxBodyBytes));
  const input = b["input"];
  const inputs = typeof input === "string" ? [input] : input;
  if (!Array.isArray(inputs) || !inputs.every((t): t is string => typeof t === "string")) {
    throw new InvalidArgumentError(
      "`input` is required and must be a string or an array of strings",
    );
  }
  const call = {
    model: model(b),
    inputs,
    truncate: truncate(b),
    noWait: wantsNoWait(req.headers[NO_WAIT_HEADER]),
    caller,
  };
  const outcome = await traced(
    rc,
    "ingress.extract",
    headers(req),
    { "http.route": "/v1/extract", "shoal.model": call.model, "shoal.inputs": inputs.length },
    (ctx) => extract(rc.gateway, call, ctx),
  );
  const tokens = outcome.tokens.reduce((n, t) => n + t, 0);
  sendBody(
    res,
    200,
    {
      object: "list",
      model: outcome.model.id,
      data: outcome.results.map((r, index) =>
        outcome.kind === "entities" ? { index, entities: r.entities } : { index, labels: r.labels },
      ),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    },
    { "x-request-id": outcome.requestId },
  );
}
