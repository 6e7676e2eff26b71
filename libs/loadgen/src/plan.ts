import { renewalTimes, type RatePiece } from "./arrivals.js";
import { sample } from "./distribution.js";
import { epochAt, epochEnd, weightsIn } from "./popularity.js";
import { Random } from "./random.js";
import type { MixEntry, RequestFunction, Workload } from "./workload.js";

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
 * The requests of one load step: arrivals at `rate` per second for `seconds`, each drawn from
 * the mix. Seeded by the workload's seed and the step's index, so every mode of a comparison is
 * offered exactly the same requests at exactly the same times.
 *
 * Without drift or per-model arrivals the step is one Poisson process over the whole mix.
 * With them, every model is its own stream (see {@link renewalTimes}) whose rate follows its
 * popularity on the sweep's clock, where step `i` runs from `i × seconds`: popularity keeps
 * drifting from one step to the next as it would over the length of a run.
 */
export function planStep(
  workload: Workload,
  stepIndex: number,
  rate: number,
  seconds: number,
): PlannedRequest[] {
  const random = new Random((workload.seed + Math.imul(stepIndex + 1, 0x9e3779b1)) >>> 0);
  const streams = workload.mix.some(
    (e) => e.popularity.drift !== undefined || e.arrivals.kind !== "poisson",
  );
  if (!streams) return pooledStep(workload, random, rate, seconds);
  return perModelArrivals(workload, stepIndex, rate, seconds).map(({ atMs, entry, model }) =>
    request(atMs, entry, model, random),
  );
}

function request(atMs: number, entry: MixEntry, model: string, random: Random): PlannedRequest {
  const inputs = entry.function === "embed" ? sample(entry.inputs, random) : 1;
  return {
    atMs,
    function: entry.function,
    model,
    inputTokens: Array.from({ length: inputs }, () => sample(entry.inputTokens, random)),
    ...(entry.outputTokens === undefined ? {} : { maxTokens: sample(entry.outputTokens, random) }),
    stream: entry.stream,
  };
}

interface Arrival {
  readonly atMs: number;
  readonly entry: MixEntry;
  readonly model: string;
}

/** One Poisson process over the mix; each arrival's entry and model drawn by weight. */
function pooledStep(
  workload: Workload,
  random: Random,
  rate: number,
  seconds: number,
): PlannedRequest[] {
  const out: PlannedRequest[] = [];
  for (let at = random.exponential(rate) * 1000; at < seconds * 1000; ) {
    const entry = workload.mix[random.pick(workload.mixCumulative)];
    if (entry === undefined) break;
    out.push(
      request(at, entry, entry.models[random.pick(entry.modelCumulative)] as string, random),
    );
    at += random.exponential(rate) * 1000;
  }
  return out;
}

/** Every model's own stream at its share of `rate` as popularity drifts, merged in time. */
function perModelArrivals(
  workload: Workload,
  stepIndex: number,
  rate: number,
  seconds: number,
): Arrival[] {
  const shares = workload.mix.reduce((n, e) => n + e.share, 0);
  const start = stepIndex * seconds;
  const out: Arrival[] = [];
  workload.mix.forEach((entry, e) => {
    const entryRate = (rate * entry.share) / shares;
    const cv = entry.arrivals.kind === "gamma" ? entry.arrivals.cv : 1;
    const pieces: { from: number; to: number; weights: number[] }[] = [];
    for (let from = start; from < start + seconds; ) {
      const epoch = epochAt(entry.popularity, from);
      const to = Math.min(start + seconds, epochEnd(entry.popularity, epoch));
      const weights = weightsIn(entry.popularity, epoch);
      const total = weights.reduce((a, b) => a + b, 0);
      pieces.push({ from, to, weights: weights.map((w) => w / total) });
      from = to;
    }
    entry.models.forEach((model, m) => {
      const seed =
        workload.seed +
        Math.imul(stepIndex + 1, 0x9e3779b1) +
        Math.imul(e + 1, 0x85ebca6b) +
        Math.imul(m + 1, 0xc2b2ae35);
      const modelPieces: RatePiece[] = pieces.map((p) => ({
        from: p.from,
        to: p.to,
        rate: entryRate * (p.weights[m] as number),
      }));
      for (const t of renewalTimes(modelPieces, cv, new Random(seed >>> 0))) {
        out.push({ atMs: (t - start) * 1000, entry, model });
      }
    });
  });
  return out.sort((a, b) => a.atMs - b.atMs);
}
