import { context, propagation, trace, type Context } from "@opentelemetry/api";

/**
 * The carrier every Shoal boundary uses: NATS headers, HTTP headers and sidecar frames all
 * reduce to "get/set a string by name". Keeping one shape means one inject and one extract.
 */
export interface HeaderCarrier {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
}

/** Writes the W3C `traceparent` (and `tracestate`) of `ctx` into `carrier`. */
export function injectContext(ctx: Context, carrier: HeaderCarrier): void {
  propagation.inject(ctx, carrier, {
    set: (c, key, value) => {
      c.set(key, value);
    },
  });
}

/** Reads W3C trace context from `carrier`; the root context when there is none. */
export function extractContext(carrier: HeaderCarrier): Context {
  return propagation.extract(context.active(), carrier, {
    get: (c, key) => c.get(key),
    keys: () => ["traceparent", "tracestate"],
  });
}

/** The `traceparent` string of `ctx`, for protocols that carry it as a field (socket frames). */
export function traceparentOf(ctx: Context): string | undefined {
  let value: string | undefined;
  injectContext(ctx, {
    get: () => undefined,
    set: (name, v) => {
      if (name === "traceparent") value = v;
    },
  });
  return value;
}

/** The trace id of `ctx`'s span, or undefined outside any span. */
export function traceIdOf(ctx: Context): string | undefined {
  const spanContext = trace.getSpanContext(ctx);
  return spanContext !== undefined && trace.isSpanContextValid(spanContext)
    ? spanContext.traceId
    : undefined;
}
