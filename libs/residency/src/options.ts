/** Knobs of the placement and eviction policy; see docs/model-loader.md for how they interact. */
export interface ResidencyPolicyOptions {
  /**
   * Share of every worker's memory kept free for activations, KV caches and allocator slack;
   * placement never plans into it.
   * @default 0.1
   */
  readonly headroomFraction?: number;
  /** Bytes kept free on every worker, when larger than the fraction. @default 0 */
  readonly headroomBytes?: number;
  /**
   * A copy loaded less than this long ago is never evicted for another model. The main guard
   * against thrash: one memory slot changes hands at most once per this period.
   * @default 5000
   */
  readonly minResidencyMs?: number;
  /**
   * Hysteresis margin: a victim is evicted only when the waiting model's need exceeds the
   * victim's keep value by this fraction.
   * @default 0.25
   */
  readonly evictMargin?: number;
  /**
   * How far ahead the recent arrival rate counts as demand: a model receiving 2 items/s has a
   * demand of 20 items over the default horizon even with an empty queue.
   * @default 10000
   */
  readonly horizonMs?: number;
  /** Decay time of the recency bonus (1 for a model used just now). @default 60000 */
  readonly recencyTauMs?: number;
  /**
   * Load time at which a copy is worth twice as much to keep as a free one: costly loads are
   * evicted last, since bringing them back costs most.
   * @default 1000
   */
  readonly loadCostMs?: number;
  /**
   * A model waiting for a first copy gains this much priority per this many ms waited (its
   * need doubles after one period), so a hot model cannot starve a cold one forever.
   * @default 2000
   */
  readonly starvationMs?: number;
  /** Pending items per copy above which a model gets one more copy. @default 64 */
  readonly replicateAbovePending?: number;
  /** An extra copy (beyond the first) of a model without demand for this long is unloaded. @default 30000 */
  readonly idleDropMs?: number;
  /** Arrival rate (items/s) below which a model counts as idle. @default 0.05 */
  readonly idleRatePerS?: number;
  /**
   * 1: memory no model is waiting for holds extra copies of the models in demand, the most
   * demand per copy first, so a burst finds several copies already loaded instead of waiting
   * for one to load. Spare copies are placed only in free memory and are the first victims when
   * a model needs room. With the loader's shares (`ModelDemand.shareCopies`), memory is shared
   * by demand: spare copies fill towards each model's share, and a copy above it is unloaded.
   * 0: copies are added only when work queues up. @default 0
   */
  readonly spareCopies?: number;
  /**
   * How long a model's share of spare copies is held at its highest before it may shrink
   * (HPA's scale-down stabilization window): the loader's, for `spareCopies`. @default 30000
   */
  readonly spareWindowMs?: number;
}

/** {@link ResidencyPolicyOptions} with every default filled in. */
export type CompiledResidencyPolicyOptions = Required<ResidencyPolicyOptions>;

export const DEFAULT_RESIDENCY_POLICY_OPTIONS: CompiledResidencyPolicyOptions = {
  headroomFraction: 0.1,
  headroomBytes: 0,
  minResidencyMs: 5000,
  evictMargin: 0.25,
  horizonMs: 10_000,
  recencyTauMs: 60_000,
  loadCostMs: 1000,
  starvationMs: 2000,
  replicateAbovePending: 64,
  idleDropMs: 30_000,
  idleRatePerS: 0.05,
  spareCopies: 0,
  spareWindowMs: 30_000,
};

/** Fills defaults and refuses values the policy cannot work with. */
export function compileResidencyPolicyOptions(
  options: ResidencyPolicyOptions = {},
): CompiledResidencyPolicyOptions {
  const o = { ...DEFAULT_RESIDENCY_POLICY_OPTIONS };
  for (const [key, value] of Object.entries(options) as [keyof ResidencyPolicyOptions, unknown][]) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_RESIDENCY_POLICY_OPTIONS)) {
      throw new RangeError(`residency policy: unknown option ${key}`);
    }
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`residency policy: ${key} must be a finite number ≥ 0`);
    }
    o[key] = value;
  }
  if (o.headroomFraction >= 1) {
    throw new RangeError("residency policy: headroomFraction must be below 1");
  }
  for (const key of ["horizonMs", "recencyTauMs", "loadCostMs", "starvationMs"] as const) {
    if (o[key] === 0) throw new RangeError(`residency policy: ${key} must be above 0`);
  }
  if (o.spareCopies !== 0 && o.spareCopies !== 1) {
    throw new RangeError("residency policy: spareCopies must be 0 or 1");
  }
  if (o.replicateAbovePending < 1) {
    throw new RangeError("residency policy: replicateAbovePending must be at least 1");
  }
  return o;
}
