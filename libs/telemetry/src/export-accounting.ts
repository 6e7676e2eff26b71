import { diag, DiagLogLevel, type DiagLogger } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { Counter, type Registry } from "prom-client";
import type { Logger } from "./logger.js";

/** A backend that is down fails every batch: its failure is logged at most this often. */
const LOG_EVERY_MS = 30_000;

/** What the OpenTelemetry SDK's batch processor says when its queue was full. */
const QUEUE_FULL = /^Dropped (\d+) spans because maxQueueSize reached/;

/**
 * Counts and logs what happens to a process's spans on their way out. Export never blocks a
 * request: spans wait in the batch processor's bounded queue, which drops what does not fit
 * when the backend is slow or down. That loss is counted here (`queue_full`), as are batches
 * the backend refused or never answered (`export_failed`), so a trace that is missing can be
 * told from one that never was.
 */
export class SpanExportAccounting {
  readonly #exported: Counter;
  readonly #dropped: Counter<"reason">;
  readonly #logger: Logger | undefined;
  #lastLogged = -Infinity;

  constructor(options: { readonly registry?: Registry; readonly logger?: Logger }) {
    const registers = options.registry === undefined ? [] : [options.registry];
    this.#exported = new Counter({
      name: "shoal_trace_spans_exported_total",
      help: "Spans the trace backend accepted from this process.",
      registers,
    });
    this.#dropped = new Counter({
      name: "shoal_trace_spans_dropped_total",
      help: "Spans lost on their way to the trace backend: queue_full (the export queue was full, the backend slow or down) or export_failed (the backend refused or did not answer).",
      labelNames: ["reason"],
      registers,
    });
    this.#logger = options.logger;
  }

  /** `inner`, counting what it exported and what it failed to. */
  exporter(inner: SpanExporter): SpanExporter {
    return {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => {
        inner.export(spans, (result) => {
          if (result.code === ExportResultCode.SUCCESS) {
            this.#exported.inc(spans.length);
          } else {
            this.#dropped.inc({ reason: "export_failed" }, spans.length);
            this.#warn(
              { err: result.error, spans: spans.length },
              "trace export failed; spans dropped",
            );
          }
          done(result);
        });
      },
      shutdown: () => inner.shutdown(),
      forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
    };
  }

  /**
   * Routes the OpenTelemetry SDK's own warnings and errors to the process's logger, counting
   * the spans its batch processor reports dropped. The SDK's diagnostics are process-wide.
   */
  installDiagnostics(): void {
    const warn = (message: string): void => {
      const full = QUEUE_FULL.exec(message);
      if (full !== null) this.#dropped.inc({ reason: "queue_full" }, Number(full[1]));
      this.#warn(
        { otel: message },
        full === null ? "tracing SDK warning" : "trace export queue full; spans dropped",
      );
    };
    const quiet = (): void => undefined;
    const logger: DiagLogger = {
      error: (message) => {
        this.#warn({ otel: message }, "tracing SDK error");
      },
      warn,
      info: quiet,
      debug: quiet,
      verbose: quiet,
    };
    diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  }

  #warn(fields: object, message: string): void {
    const now = performance.now();
    if (now - this.#lastLogged < LOG_EVERY_MS) return;
    this.#lastLogged = now;
    this.#logger?.warn(fields, message);
  }
}
