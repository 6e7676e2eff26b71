/**
 * The search autotune runs over serving parameters: coordinate descent, one parameter at a
 * time in the order given, each candidate value measured with the others held at the best
 * found so far. A full grid is out of reach (every point is a load sweep of minutes), and the
 * parameters that matter interact weakly enough (batch cost budget first, then how batches
 * are filled) that one pass in a sensible order finds what a grid would, at a fraction of
 * the sweeps.
 */

/** One parameter and the values to try for it; the first is the untuned default. */
export interface TuningParameter<V = unknown> {
  readonly name: string;
  readonly candidates: readonly V[];
}

/** How well a configuration did: its knee and the p99 latency there. */
export interface TuningScore {
  readonly kneeRps: number;
  readonly p99Ms: number | null;
}

export interface TuningTrial {
  readonly config: Readonly<Record<string, unknown>>;
  readonly score: TuningScore;
  /** Whether this trial became the best so far when it was measured. */
  readonly adopted: boolean;
  /** A second measurement of a configuration that beat the best once. */
  readonly confirmation?: boolean;
}

export interface TuningOutcome {
  /** The best configuration: every parameter named, at its chosen value. */
  readonly best: Readonly<Record<string, unknown>>;
  readonly bestScore: TuningScore;
  /** The defaults' score, measured first. */
  readonly defaultScore: TuningScore;
  /** Every configuration measured, in order. */
  readonly trials: readonly TuningTrial[];
}

export interface TuneOptions {
  /**
   * A candidate must beat the best knee by more than this share to replace it, so noise
   * between runs does not move the configuration around. Within it, a p99 lower by more than
   * the same share wins. @default 0.05
   */
  readonly minGain?: number;
  /**
   * Measure a candidate that beats the best a second time, and adopt it only if that run
   * beats the best too (its score is then the lower of the two). One sweep's knee moves by a
   * whole load step between runs on a shared machine, so a single lucky run would otherwise
   * set a bar the defaults cannot be compared against fairly. @default true
   */
  readonly confirm?: boolean;
  /** Called after each trial (progress, logs). */
  readonly onTrial?: (trial: TuningTrial, index: number) => void;
}

/** Whether `candidate` is a real improvement over `best` (see {@link TuneOptions.minGain}). */
export function beats(candidate: TuningScore, best: TuningScore, minGain = 0.05): boolean {
  if (candidate.kneeRps > best.kneeRps * (1 + minGain)) return true;
  if (candidate.kneeRps < best.kneeRps * (1 - minGain)) return false;
  if (candidate.p99Ms === null || best.p99Ms === null) return false;
  return candidate.p99Ms < best.p99Ms * (1 - minGain) && candidate.kneeRps >= best.kneeRps;
}

/**
 * Coordinate descent over `parameters`, measuring each configuration with `measure` (a load
 * sweep, given the best score so far so it can start near that knee).
 */
export async function tune(
  parameters: readonly TuningParameter[],
  measure: (config: Readonly<Record<string, unknown>>, best?: TuningScore) => Promise<TuningScore>,
  options: TuneOptions = {},
): Promise<TuningOutcome> {
  const names = new Set<string>();
  for (const p of parameters) {
    if (p.candidates.length === 0) throw new RangeError(`tune: ${p.name} has no candidates`);
    if (names.has(p.name)) throw new RangeError(`tune: ${p.name} is listed twice`);
    names.add(p.name);
  }
  const trials: TuningTrial[] = [];
  const record = (trial: TuningTrial): void => {
    trials.push(trial);
    options.onTrial?.(trial, trials.length - 1);
  };
  let best: Record<string, unknown> = Object.fromEntries(
    parameters.map((p) => [p.name, p.candidates[0]]),
  );
  let bestScore = await measure(best);
  const defaultScore = bestScore;
  record({ config: best, score: bestScore, adopted: true });
  for (const parameter of parameters) {
    for (const value of parameter.candidates.slice(1)) {
      const config = { ...best, [parameter.name]: value };
      const score = await measure(config, bestScore);
      let adopted = beats(score, bestScore, options.minGain);
      let kept = score;
      if (adopted && options.confirm !== false) {
        record({ config, score, adopted: false });
        const again = await measure(config, bestScore);
        adopted = beats(again, bestScore, options.minGain);
        kept = again.kneeRps < score.kneeRps ? again : score;
        record({ config, score: again, adopted, confirmation: true });
      } else {
        record({ config, score, adopted });
      }
      if (adopted) {
        best = config;
        bestScore = kept;
      }
    }
  }
  return { best, bestScore, defaultScore, trials };
}
