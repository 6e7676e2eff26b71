/**
 * Telemetry shared by every Shoal process: OpenTelemetry tracing with OTLP export driven by the
 * standard environment variables, W3C context propagation across every boundary, pino JSON logs
 * that carry the active trace id, and Prometheus metrics served on a port of their own.
 */
export { startTracing } from "./tracing.js";
export { DEFAULT_TRACE_RATIO } from "./sampler.js";
export type { Tracing, TracingOptions } from "./tracing.js";
export { injectContext, extractContext, traceparentOf, traceIdOf } from "./propagation.js";
export type { HeaderCarrier } from "./propagation.js";
export { createLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { natsHeaderCarrier } from "./nats-carrier.js";
export { httpHeaderCarrier } from "./http-carrier.js";
export { traceFieldsCarrier, type TraceFields } from "./trace-fields.js";
export { wallClockUs } from "./clock.js";
export { createMetricsRegistry, serveMetrics } from "./metrics.js";
export { Readiness } from "./readiness.js";
export { reportToSupervisor, supervisedMetrics } from "./cluster-metrics.js";
export type { MetricsSource } from "./cluster-metrics.js";
export { perScrape } from "./per-scrape.js";
export type { MetricsServer, MetricsServerOptions } from "./metrics.js";
