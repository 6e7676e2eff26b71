import type { Random } from "./random.js";
import { number, object } from "./validate.js";
import { WorkloadError } from "./workload-error.js";

/**
 * How a mix entry's requests arrive in time.
 *
 * - `poisson` (the default): the entry's requests are one Poisson process at its share of the
 *   offered rate; which model each goes to is drawn by popularity.
 * - `gamma`: every model has its own renewal process whose gaps are Gamma-distributed with
 *   coefficient of variation `cv` (1 is Poisson; above 1, requests come in bursts separated by
 *   lulls, at the same mean rate). Production inference traffic is burstier than Poisson:
 *   BurstGPT (Wang et al., 2024, arXiv:2401.17644; 10 M requests to Azure OpenAI GPT
 *   services) fits its inter-arrival times with Gamma distributions rather than exponential
 *   ones, and AlpaServe (Li et al., OSDI 2023) models each model's arrivals as a Gamma process
 *   and sweeps its CV to stress placement. Each model bursting on its own is what makes a
 *   static split of accelerators between models wrong at any given moment.
 */
export type Arrivals =
  | { readonly kind: "poisson" }
  | { readonly kind: "gamma"; readonly cv: number };

export function compileArrivals(raw: unknown, where: string): Arrivals {
  if (raw === undefined || raw === "poisson") return { kind: "poisson" };
  if (typeof raw === "string") {
    throw new WorkloadError(`${where} must be "poisson" or {"gamma": {"cv": c}}, got "${raw}"`);
  }
  const a = object(raw, where, ["gamma"]);
  const g = object(a["gamma"], `${where}.gamma`, ["cv"]);
  return { kind: "gamma", cv: number(g["cv"], `${where}.gamma.cv`, 0.1, 20) };
}

/** The rate of one stream over the sweep's clock: constant within each piece. */
export interface RatePiece {
  /** Start of the piece, s on the sweep's clock. */
  readonly from: number;
  readonly to: number;
  /** Arrivals per second during the piece. */
  readonly rate: number;
}

/**
 * Arrival times (s on the sweep's clock) of one renewal stream over `pieces` (contiguous, in
 * order). Gaps are drawn in operational time, where the rate is 1, and mapped back through
 * the piecewise-constant rate, so the stream follows the rate as popularity drifts and keeps
 * its burstiness. The first gap is a fraction of a full one, an approximation of starting the
 * stream in its stationary state rather than just after an arrival.
 */
export function renewalTimes(pieces: readonly RatePiece[], cv: number, random: Random): number[] {
  const shape = 1 / (cv * cv);
  const gap = (): number => (shape === 1 ? random.exponential(1) : random.gamma(shape));
  const out: number[] = [];
  let due = gap() * random.next();
  for (const piece of pieces) {
    if (piece.rate <= 0) continue;
    const length = (piece.to - piece.from) * piece.rate;
    while (due < length) {
      out.push(piece.from + due / piece.rate);
      due += gap();
    }
    due -= length;
  }
  return out;
}
