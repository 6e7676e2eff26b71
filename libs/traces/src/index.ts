export { JaegerQuery, JaegerQueryError, type FindTraces } from "./jaeger-query.js";
export { spansFromOtlpJson, type OtlpTracesJson } from "./otlp-json.js";
export { durationUs, type AttributeValue, type TraceSpan } from "./span.js";
export { groupTraces, isConnected, type Trace } from "./trace.js";
