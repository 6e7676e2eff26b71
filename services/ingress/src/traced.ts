import { SpanKind, SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import { PermissionDeniedError, type RequestTimings } from "@shoal/gateway";
import { extractContext, type HeaderCarrier, type Logger } from "@shoal/telemetry";
import { audit } from "@shoal/tenants";
import { asRequestError } from "./error-table.js";
import type { IngressMetrics } from "./metrics.js";

/** What every protocol handler records a request with. */
export interface Edge {
  readonly tracer: Tracer;
  /** Without, nothing is counted (tests that build a handler alone). */
  readonly metrics?: IngressMetrics | undefined;
  /** Where requests refused for their key's grants are audited. */
  readonly logger: Logger;
}

/**
 * Runs `fn` inside the ingress span of a request, continuing the client's W3C trace when its
 * headers carry one, and counts it. Every protocol's handler goes through here, so each
 * request has exactly one root span at the edge and is counted once, under its route (the
 * span's name less `ingress.`) and its catalog model.
 */
export async function traced<T>(
  edge: Edge,
  name: string,
  carrier: HeaderCarrier,
  attributes: Record<string, string | number>,
  fn: (ctx: Context) => Promise<T>,
): Promise<T> {
  const parent = extractContext(carrier);
  const span = edge.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  const done = edge.metrics?.start(
    name.replace(/^ingress\./, ""),
    String(attributes["shoal.model"] ?? ""),
  );
  try {
    const result = await fn(trace.setSpan(parent, span));
    done?.("ok", timingsOf(result));
    return result;
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    done?.(asRequestError(err).kind, undefined);
    auditDenied(edge, name, err);
    if (typeof err === "object" && err !== null) counted.add(err);
    throw err;
  } finally {
    span.end();
  }
}

/** Errors already counted by {@link traced}, so the handler that answers them does not again. */
const counted = new WeakSet<object>();

/**
 * Counts a request refused before it reached {@link traced} (malformed, too large, an unknown
 * route or model), unless `err` came out of it already counted.
 */
export function countRefused(edge: Edge, route: string, err: unknown): void {
  if (typeof err === "object" && err !== null && counted.has(err)) return;
  edge.metrics?.refused(route, asRequestError(err).kind);
  auditDenied(edge, route, err);
}

/** A valid key asking for what its grants do not cover is worth an audit line. */
function auditDenied(edge: Edge, route: string, err: unknown): void {
  if (!(err instanceof PermissionDeniedError)) return;
  audit(edge.logger, {
    action: "request",
    outcome: "denied",
    tenant: err.tenant,
    keyPrefix: err.keyPrefix,
    target: `${route} ${err.target}`,
    reason: "no grant for the model",
  });
}

/** The phases of an answer that carries them (embeddings, scores, entities). */
function timingsOf(result: unknown): RequestTimings | undefined {
  const timings = (result as { timings?: unknown } | undefined)?.timings;
  return typeof timings === "object" && timings !== null && "computeUs" in timings
    ? (timings as RequestTimings)
    : undefined;
}
