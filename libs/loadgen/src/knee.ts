import type { StepResult } from "./step-result.js";

/** Why a step is past the knee. */
export type KneeMiss = "errors" | "slo" | "saturated";

export interface Knee {
  /** The knee step, or undefined when even the lowest load misses. */
  readonly step: StepResult | undefined;
  /** The index of the knee step in the steps given; -1 when there is none. */
  readonly index: number;
  /** The first step past the knee and why it is, when one was measured. */
  readonly firstMiss?: { readonly index: number; readonly reason: KneeMiss };
}

export interface KneeOptions {
  readonly sloP99Ms: number;
  /**
   * Achieved throughput under this share of the load actually sent (`sentRps`, not the
   * nominal rate, which a Poisson plan misses by a few percent) means the cluster stopped
   * keeping up (an open-loop queue is growing), even while the p99 of what did come back looks
   * fine. @default 0.95
   */
  readonly keepUp?: number;
}

/** Why `step` is past the knee, or undefined when it is within it. */
export function kneeMiss(step: StepResult, options: KneeOptions): KneeMiss | undefined {
  if (step.failed > 0) return "errors";
  if (!(step.latencyMs.p99 <= options.sloP99Ms)) return "slo";
  if (step.achievedRps < (options.keepUp ?? 0.95) * step.sentRps) return "saturated";
  return undefined;
}

/**
 * The knee of a load sweep: the highest offered load whose p99 stays within the SLO, with no
 * failed request, while achieved throughput still keeps up with the offered load. `steps` must
 * be in ascending offered load; the knee is the last one before the first miss, because a step
 * that happens to pass above a miss is noise on a saturated cluster, not capacity.
 */
export function findKnee(steps: readonly StepResult[], options: KneeOptions): Knee {
  for (let i = 1; i < steps.length; i++) {
    if ((steps[i] as StepResult).offeredRps <= (steps[i - 1] as StepResult).offeredRps) {
      throw new RangeError("findKnee: steps must be in ascending offered load");
    }
  }
  for (let i = 0; i < steps.length; i++) {
    const reason = kneeMiss(steps[i] as StepResult, options);
    if (reason !== undefined) {
      return { step: steps[i - 1], index: i - 1, firstMiss: { index: i, reason } };
    }
  }
  return { step: steps.at(-1), index: steps.length - 1 };
}
