import type { CompiledResidencyPolicyOptions } from "./options.js";
import type { ModelDemand } from "./snapshot.js";

/**
 * Work expected for a model over the horizon, in items: what is queued now plus what its recent
 * arrival rate brings.
 */
export function demand(m: ModelDemand, o: CompiledResidencyPolicyOptions): number {
  return m.pending + (m.ratePerS * o.horizonMs) / 1000;
}

/** 1 for a model used just now, decaying towards 0 with the time since it last had work. */
export function recency(m: ModelDemand, nowMs: number, o: CompiledResidencyPolicyOptions): number {
  if (m.lastDemandAt === undefined) return 0;
  return Math.exp(-Math.max(0, nowMs - m.lastDemandAt) / o.recencyTauMs);
}

/**
 * What keeping one copy of `m` is worth: the share of its demand this copy serves (little when
 * other copies exist) plus a recency bonus, scaled by what reloading it would cost. Not LRU:
 * a model idle for a minute but costly to load and still receiving work outranks one used a
 * second ago that nobody is asking for any more.
 */
export function keepValue(
  m: ModelDemand,
  copies: number,
  nowMs: number,
  o: CompiledResidencyPolicyOptions,
): number {
  const share = demand(m, o) / Math.max(1, copies);
  return (share + recency(m, nowMs, o)) * (1 + m.loadMs / o.loadCostMs);
}

/**
 * How badly a model without a copy needs one: its demand, growing with the time it has waited
 * so that a steady hot model cannot keep a cold one out forever.
 */
export function loadNeed(m: ModelDemand, nowMs: number, o: CompiledResidencyPolicyOptions): number {
  if (m.pinned) return Number.POSITIVE_INFINITY;
  const waitedMs = m.waitingSince === undefined ? 0 : Math.max(0, nowMs - m.waitingSince);
  return demand(m, o) * (1 + waitedMs / o.starvationMs);
}
