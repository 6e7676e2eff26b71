import { context, trace } from "@opentelemetry/api";
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from "pino";

export type { Logger } from "pino";

export interface LoggerOptions {
  /** Bound as `service` on every line. */
  readonly service: string;
  /** @default "info" */
  readonly level?: LevelWithSilent;
  /** @default stdout */
  readonly destination?: DestinationStream;
}

/**
 * JSON lines via pino. Every line logged inside an active span carries its `trace_id` and
 * `span_id`, so a log search and a trace view meet on the same id.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin() {
        const spanContext = trace.getSpanContext(context.active());
        return spanContext === undefined
          ? {}
          : { trace_id: spanContext.traceId, span_id: spanContext.spanId };
      },
    },
    options.destination,
  );
}
