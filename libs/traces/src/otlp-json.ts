import type { AttributeValue, TraceSpan } from "./span.js";

/** OTLP/JSON `AnyValue`: exactly one field is set; 64-bit integers arrive as strings. */
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: unknown;
  kvlistValue?: unknown;
  bytesValue?: string;
}

interface KeyValue {
  key: string;
  value?: AnyValue;
}

interface OtlpSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: KeyValue[];
  status?: { code?: string | number };
  links?: { traceId?: string; spanId?: string }[];
}

/** The OTLP/JSON `TracesData` shape (what exporters send and Jaeger's API v3 returns). */
export interface OtlpTracesJson {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

/**
 * Flattens an OTLP/JSON document into spans. Ids are lower-case hex as the OTLP/JSON encoding
 * specifies; a span without ids or times is malformed and skipped rather than guessed at.
 */
export function spansFromOtlpJson(body: OtlpTracesJson): TraceSpan[] {
  const spans: TraceSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    const service = typeof resource["service.name"] === "string" ? resource["service.name"] : "";
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const span = fromOtlp(s, service);
        if (span !== undefined) spans.push(span);
      }
    }
  }
  return spans;
}

function fromOtlp(s: OtlpSpan, service: string): TraceSpan | undefined {
  const startUs = nanosToMicros(s.startTimeUnixNano);
  const endUs = nanosToMicros(s.endTimeUnixNano);
  if (!s.traceId || !s.spanId || startUs === undefined || endUs === undefined) return undefined;
  const code = s.status?.code;
  return {
    traceId: s.traceId.toLowerCase(),
    spanId: s.spanId.toLowerCase(),
    parentSpanId: (s.parentSpanId ?? "").toLowerCase(),
    service,
    name: s.name ?? "",
    startUs,
    endUs,
    attributes: attributesOf(s.attributes),
    error: code === 2 || code === "STATUS_CODE_ERROR",
    links: (s.links ?? []).flatMap((l) =>
      l.traceId && l.spanId
        ? [{ traceId: l.traceId.toLowerCase(), spanId: l.spanId.toLowerCase() }]
        : [],
    ),
  };
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    if (value === undefined) continue;
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.bytesValue !== undefined) out[key] = value.bytesValue;
    else out[key] = JSON.stringify(value.arrayValue ?? value.kvlistValue ?? null);
  }
  return out;
}

/** Nanoseconds (a decimal string, as 64-bit integers travel in JSON) to whole microseconds. */
function nanosToMicros(nanos: string | number | undefined): number | undefined {
  if (nanos === undefined || nanos === "") return undefined;
  try {
    return Number(BigInt(nanos) / 1000n);
  } catch {
    return undefined;
  }
}
