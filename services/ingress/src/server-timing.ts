import type { RequestTimings } from "@shoal/gateway";

/**
 * A `Server-Timing` header value (W3C Server Timing) with where the request's time went, so a
 * client sees queue wait, batch formation and compute without opening a trace.
 */
export function serverTiming(t: RequestTimings): string {
  const ms = (us: number): string => (us / 1000).toFixed(3);
  return [
    `annotate;dur=${ms(t.annotateUs)}`,
    `queue;dur=${ms(t.queueUs)}`,
    `batch;dur=${ms(t.batchUs)}`,
    `compute;dur=${ms(t.computeUs)}`,
    `total;dur=${ms(t.totalUs)}`,
  ].join(", ");
}
