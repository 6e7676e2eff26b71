/**
 * The durations of a W3C `Server-Timing` header (`name;dur=12.5, other;desc="x";dur=3`), ms by
 * metric name. Ingress sends one with every answer (annotate, queue, batch, compute, total), so
 * the load generator can say where latency went at each load step without a trace backend.
 * Metrics without a `dur`, or with one that is not a finite number ≥ 0, are left out.
 */
export function parseServerTiming(header: string | null | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (header === null || header === undefined) return out;
  for (const metric of header.split(",")) {
    const [name, ...params] = metric.split(";").map((p) => p.trim());
    if (name === undefined || name === "") continue;
    for (const param of params) {
      const match = /^dur=(.+)$/.exec(param);
      if (match === null) continue;
      const value = Number(match[1]);
      if (Number.isFinite(value) && value >= 0) out[name] = value;
    }
  }
  return out;
}
