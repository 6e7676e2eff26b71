import { SpanKind, SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import { extractContext, type HeaderCarrier } from "@shoal/telemetry";

/**
 * Runs `fn` inside the ingress span of a request, continuing the client's W3C trace when its
 * headers carry one. Every protocol's handler goes through here, so each request has exactly
 * one root span at the edge.
 */
export async function traced<T>(
  tracer: Tracer,
  name: string,
  carrier: HeaderCarrier,
  attributes: Record<string, string | number>,
  fn: (ctx: Context) => Promise<T>,
): Promise<T> {
  const parent = extractContext(carrier);
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  try {
    return await fn(trace.setSpan(parent, span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
