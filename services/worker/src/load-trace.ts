import type { Context, SpanContext, Tracer } from "@opentelemetry/api";

/** A model load, as the requests that waited for it are told of it. Times are Unix ms. */
export interface ModelLoadRecord {
  readonly startMs: number;
  readonly endMs: number;
  /** The load's own span (in the model-loader's trace), which each request's copy links to. */
  readonly span?: SpanContext | undefined;
}

/**
 * Records, in a request's own trace, the load of its model that it waited for. A request
 * queued for a cold model spends the load's time in the queue; without this span its trace
 * would show a long queue wait and no reason for it. The load itself belongs to the
 * model-loader's trace (it serves every waiting request at once), so this is a copy with the
 * load's times and a link to the original. Nothing is recorded for requests queued after the
 * model was resident.
 */
export function traceWaitedLoad(
  tracer: Tracer,
  load: ModelLoadRecord | undefined,
  parent: Context,
  enqueuedMs: number,
  model: string,
): void {
  if (load === undefined || enqueuedMs >= load.endMs) return;
  tracer
    .startSpan(
      "model.load",
      {
        startTime: load.startMs,
        attributes: {
          "shoal.model": model,
          "shoal.load_ms": Math.round(load.endMs - load.startMs),
        },
        links: load.span === undefined ? [] : [{ context: load.span }],
      },
      parent,
    )
    .end(load.endMs);
}
