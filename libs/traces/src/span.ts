/** An attribute value as OTLP carries it, flattened (arrays and maps are kept as JSON text). */
export type AttributeValue = string | number | boolean;

/** One span, as any service or the sidecar exported it. Times are Unix microseconds. */
export interface TraceSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  /** `service.name` of the resource that exported it. */
  readonly service: string;
  readonly name: string;
  readonly startUs: number;
  readonly endUs: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** Whether the span's status is ERROR. */
  readonly error: boolean;
  /** Spans of other traces this one is linked to (e.g. the model load a request waited for). */
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
}

/** A span's duration, µs. */
export function durationUs(span: TraceSpan): number {
  return span.endUs - span.startUs;
}
