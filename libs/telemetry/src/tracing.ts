import { diag, propagation, trace, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as OTLPHttpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OTLPHttpProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { Registry } from "prom-client";
import { SpanExportAccounting } from "./export-accounting.js";
import type { Logger } from "./logger.js";
import { samplerFromEnv } from "./sampler.js";

export interface TracingOptions {
  /** `service.name` of every span; `OTEL_SERVICE_NAME` in `env` overrides it. */
  readonly serviceName: string;
  /**
   * Where the standard `OTEL_EXPORTER_OTLP_*` variables are read from. Only a service's `main`
   * passes `process.env`; tests pass their own.
   */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Extra processors (tests use an in-memory exporter).
   * @default []
   */
  readonly processors?: readonly SpanProcessor[];
  /** Where export failures and spans dropped are logged. */
  readonly logger?: Logger;
  /** Where spans exported and dropped are counted (`shoal_trace_spans_*_total`). */
  readonly metrics?: Registry;
}

export interface Tracing {
  readonly tracer: Tracer;
  /** Whether spans leave the process (an OTLP endpoint was configured). */
  readonly exporting: boolean;
  /** Flushes pending spans and uninstalls the provider. */
  shutdown(): Promise<void>;
}

/**
 * Installs the process-wide tracer provider and the W3C propagator. Spans are always created,
 * so trace ids exist for logs and propagation even when nothing is exported; they are recorded
 * (as `OTEL_TRACES_SAMPLER` says) and exported over OTLP/HTTP only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, as the
 * OpenTelemetry specification asks.
 */
export function startTracing(options: TracingOptions): Tracing {
  const { env } = options;
  const serviceName = env["OTEL_SERVICE_NAME"] ?? options.serviceName;
  const exporter = otlpExporterFromEnv(env);
  const spanProcessors: SpanProcessor[] = [...(options.processors ?? [])];
  if (exporter !== undefined) {
    const accounting = new SpanExportAccounting({
      registry: options.metrics,
      logger: options.logger,
    });
    accounting.installDiagnostics();
    // A short delay keeps traces fresh while debugging latency; the batch still amortises I/O.
    spanProcessors.push(
      new BatchSpanProcessor(accounting.exporter(exporter), { scheduledDelayMillis: 500 }),
    );
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    sampler: samplerFromEnv(env, spanProcessors.length > 0),
    spanProcessors,
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return {
    tracer: trace.getTracer(serviceName),
    exporting: exporter !== undefined,
    async shutdown() {
      // The last spans are flushed if the backend takes them; one that is down must not make
      // the process's shutdown fail.
      await provider.shutdown().catch((err: unknown) => {
        options.logger?.warn({ err }, "trace export failed at shutdown; spans dropped");
      });
      trace.disable();
      propagation.disable();
      diag.disable();
    },
  };
}

function otlpExporterFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): SpanExporter | undefined {
  // The exporters read process.env themselves; the URL is passed explicitly so the `env` given
  // here is the one that counts. The signal-specific variable is used as is, the generic one
  // gets the traces path appended, as the specification says.
  const tracesEndpoint = nonEmpty(env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]);
  const endpoint = nonEmpty(env["OTEL_EXPORTER_OTLP_ENDPOINT"]);
  const url =
    tracesEndpoint ??
    (endpoint === undefined ? undefined : `${endpoint.replace(/\/+$/, "")}/v1/traces`);
  if (url === undefined) return undefined;
  const protocol =
    nonEmpty(env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]) ??
    nonEmpty(env["OTEL_EXPORTER_OTLP_PROTOCOL"]) ??
    "http/protobuf";
  switch (protocol) {
    case "http/json":
      return new OTLPHttpJsonExporter({ url });
    case "http/protobuf":
      return new OTLPHttpProtoExporter({ url });
    default:
      throw new Error(
        `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported; use http/protobuf or http/json`,
      );
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
