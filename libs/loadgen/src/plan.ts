import { sample } from "./distribution.js";
import { Random } from "./random.js";
import type { RequestFunction, Workload } from "./workload.js";

/** One request of a run, fixed before the run starts. */
export interface PlannedRequest {
  /** Send time after the step's start, ms. */
  readonly atMs: number;
  readonly function: RequestFunction;
  readonly model: string;
  /** Tokens of each input (embed), or of the one prompt (generate). */
  readonly inputTokens: readonly number[];
  /** Generate only. */
  readonly maxTokens?: number;
  readonly stream: boolean;
}

/**
 * The requests of one load step: Poisson arrivals at `rate` per second for `seconds`, each
 * drawn from the mix. Seeded by the workload's seed and the step's index, so every mode of a
 * comparison is offered exactly the same requests at exactly the same times.
 */
export function planStep(
  workload: Workload,
  stepIndex: number,
  rate: number,
  seconds: number,
): PlannedRequest[] {
  const random = new Random((workload.seed + Math.imul(stepIndex + 1, 0x9e3779b1)) >>> 0);
  const out: PlannedRequest[] = [];
  for (let at = random.exponential(rate) * 1000; at < seconds * 1000; ) {
    const entry = workload.mix[random.pick(workload.mixCumulative)];
    if (entry === undefined) break;
    const model = entry.models[random.pick(entry.modelCumulative)] as string;
    const inputs = entry.function === "embed" ? sample(entry.inputs, random) : 1;
    out.push({
      atMs: at,
      function: entry.function,
      model,
      inputTokens: Array.from({ length: inputs }, () => sample(entry.inputTokens, random)),
      ...(entry.outputTokens === undefined
        ? {}
        : { maxTokens: sample(entry.outputTokens, random) }),
      stream: entry.stream,
    });
    at += random.exponential(rate) * 1000;
  }
  return out;
}
