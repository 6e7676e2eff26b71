/** Demand of one model at the last sample. */
export interface MeasuredDemand {
  /** Work items queued or being served (the work stream's messages for the model). */
  readonly pending: number;
  /** Smoothed arrival rate: items served plus queue growth, per second. */
  readonly ratePerS: number;
  /** Monotonic ms of the last sample that saw work queued or served; undefined when never. */
  readonly lastDemandAt: number | undefined;
}

interface State {
  pending: number;
  served: number;
  ratePerS: number;
  lastDemandAt: number | undefined;
}

/**
 * Turns periodic samples of each model's queue depth and served-item counter into pending
 * work, an arrival rate (exponentially smoothed over `halfLifeMs`) and the last time the model
 * had work. The counters come from two places on purpose: the queue says what waits for a model
 * with no copy anywhere, the sidecars say what resident copies are getting through.
 */
export class DemandMeter {
  readonly #halfLifeMs: number;
  readonly #state = new Map<string, State>();
  #lastSampleAt: number | undefined;

  /** @param halfLifeMs after this long, an old rate weighs half in the smoothed one. */
  constructor(halfLifeMs = 5000) {
    this.#halfLifeMs = halfLifeMs;
  }

  /**
   * @param pending queued items per model (missing: none).
   * @param served items served per model since its copies were loaded (missing: none). A
   *   counter that went down (a copy was unloaded) counts as no progress, not negative.
   */
  sample(
    models: readonly string[],
    pending: ReadonlyMap<string, number>,
    served: ReadonlyMap<string, number>,
    nowMs: number,
  ): void {
    const dtMs = this.#lastSampleAt === undefined ? 0 : nowMs - this.#lastSampleAt;
    this.#lastSampleAt = nowMs;
    const keep = dtMs > 0 ? Math.pow(0.5, dtMs / this.#halfLifeMs) : 1;
    for (const model of models) {
      const p = pending.get(model) ?? 0;
      const s = served.get(model) ?? 0;
      const st = this.#state.get(model);
      if (st === undefined) {
        this.#state.set(model, {
          pending: p,
          served: s,
          ratePerS: 0,
          lastDemandAt: p > 0 ? nowMs : undefined,
        });
        continue;
      }
      const progress = Math.max(0, s - st.served) + Math.max(0, p - st.pending);
      if (dtMs > 0) {
        st.ratePerS = keep * st.ratePerS + (1 - keep) * ((progress * 1000) / dtMs);
      }
      if (p > 0 || s !== st.served) st.lastDemandAt = nowMs;
      st.pending = p;
      st.served = s;
    }
  }

  get(model: string): MeasuredDemand {
    const st = this.#state.get(model);
    return st === undefined
      ? { pending: 0, ratePerS: 0, lastDemandAt: undefined }
      : { pending: st.pending, ratePerS: st.ratePerS, lastDemandAt: st.lastDemandAt };
  }
}
