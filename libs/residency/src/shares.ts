/**
 * Sharing a fleet's memory among models by demand: used alike by pull mode's model-loader
 * (spare copies) and by the bench router's autoscaler (`fillMemory`), so both modes hold the
 * same copies for the same demand and differ only in how work reaches them.
 */

export interface ShareModel {
  readonly model: string;
  readonly bytes: number;
  /** Arrival rate, items a second (any unit, as long as all models use the same). */
  readonly rate: number;
}

/**
 * Copies per model when `usableBytes` (the memory of `workers` accelerators, less headroom),
 * less the `min` copies every model keeps, is divided in proportion to arrival rates: whole
 * copies, rounded (the largest remainders first while memory lasts), at most one per
 * accelerator.
 */
export function memoryShares(
  models: readonly ShareModel[],
  usableBytes: number,
  workers: number,
  min: number,
): Map<string, number> {
  let spare = usableBytes - models.reduce((n, m) => n + min * m.bytes, 0);
  const total = models.reduce((n, m) => n + m.rate, 0);
  const shares = new Map(models.map((m) => [m.model, min]));
  if (total <= 0 || spare <= 0) return shares;
  const exact = models.map((m) => ({ m, extra: ((m.rate / total) * spare) / m.bytes }));
  for (const { m, extra } of exact) {
    const whole = Math.max(0, Math.min(Math.floor(extra), workers - min));
    shares.set(m.model, min + whole);
    spare -= whole * m.bytes;
  }
  const byRemainder = exact.sort(
    (a, b) => (b.extra % 1) - (a.extra % 1) || a.m.model.localeCompare(b.m.model),
  );
  for (const { m, extra } of byRemainder) {
    const now = shares.get(m.model) ?? min;
    // Rounded, not handed out to the last byte: a model with a sliver of demand holding a
    // copy only because memory was left over can stand where a busy model's copy must go.
    if (extra % 1 < 0.5 || m.bytes > spare || now >= workers) continue;
    shares.set(m.model, now + 1);
    spare -= m.bytes;
  }
  return shares;
}

/**
 * A scale-down stabilization window (Kubernetes HPA's): what a model is sized to is the
 * highest recommendation of the last `windowMs`, so sizes rise at once and fall only when the
 * lower figure has held for the whole window, and a dip does not drop a copy the next burst
 * needs.
 */
export class Recommendations {
  readonly #seen = new Map<string, { readonly atMs: number; readonly replicas: number }[]>();

  /** Records `replicas` for `model` at `atMs` and returns the window's highest. */
  stabilized(model: string, replicas: number, atMs: number, windowMs: number): number {
    const kept = (this.#seen.get(model) ?? []).filter((r) => atMs - r.atMs < windowMs);
    kept.push({ atMs, replicas });
    this.#seen.set(model, kept);
    return Math.max(...kept.map((r) => r.replicas));
  }
}
