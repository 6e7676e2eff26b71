/**
 * One load sweep of a bench mode: the workload's steps in turn against one harness, stopping
 * two steps past the knee, and the summary `result.json` reports for the mode.
 */
import {
  findKnee,
  kneeMiss,
  planStep,
  quantile,
  runStep,
  type Send,
  type StepProgress,
  type StepResult,
  type Workload,
} from "@shoal/loadgen";
import type { Harness } from "./harness/harness.js";

/**
 * A step with the wall-clock window it ran in (ISO 8601), so `npm run trace-report -- --bench`
 * can read the traces of exactly that step.
 */
export type SweptStep = StepResult & {
  readonly window: { readonly from: string; readonly to: string };
  /** How busy the accelerators were, one by one, over the step: p10, p50 and p90 of them. */
  readonly utilizationSpread?: UtilizationSpread;
  /** With dynamic residency: models loaded and unloaded per minute over the step. */
  readonly residencyPerMin?: { readonly loads: number; readonly unloads: number };
};

export interface UtilizationSpread {
  readonly p10: number;
  readonly p50: number;
  readonly p90: number;
}

export interface ModeResult {
  readonly knee_rps: number;
  readonly knee_offered_rps: number;
  readonly knee_tokens_per_s: number;
  readonly p50_ms_at_knee: number | null;
  readonly p90_ms_at_knee: number | null;
  readonly p99_ms_at_knee: number | null;
  readonly utilization_at_knee: number | null;
  /** p10/p50/p90 over the accelerators of each one's busy share during the knee step. */
  readonly utilization_distribution_at_knee: UtilizationSpread | null;
  /** Batch fill: mean inputs per batch the sidecars ran during the knee step. */
  readonly inputs_per_batch_at_knee: number | null;
  readonly first_miss: { readonly offered_rps: number | undefined; readonly reason: string } | null;
  readonly steps: readonly SweptStep[];
}

function progress(label: string, stepSeconds: number, p: StepProgress): void {
  const line =
    `[bench] ${label} ${p.offeredRps} req/s  ${p.elapsedS.toFixed(0)}/${stepSeconds}s  ` +
    `sent ${p.sent}  answered ${p.answered}  failed ${p.failed}  in flight ${p.inFlight}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${line}\u001b[K`);
  else if (Math.round(p.elapsedS) % 5 === 0) console.error(line);
}

/**
 * Runs the steps (`rates`, ascending) of `workload` against `harness` with `send`, from the
 * one at index `from`. A step's requests are seeded by its index in `rates`, so a sweep that
 * starts higher is offered the same requests at each rate as one that starts at the bottom.
 */
export async function sweep(
  label: string,
  harness: Harness,
  workload: Workload,
  rates: readonly number[],
  send: Send,
  from = 0,
): Promise<ModeResult> {
  const steps: SweptStep[] = [];
  let misses = 0;
  for (const [i, rate] of rates.entries()) {
    if (i < from) continue;
    const before = await harness.counters();
    const changesBefore = await harness.residencyChanges?.();
    const started = performance.now();
    const startedAt = new Date().toISOString();
    const result = await runStep({
      offeredRps: rate,
      plan: planStep(workload, i, rate, workload.load.stepSeconds),
      seconds: workload.load.stepSeconds,
      warmupSeconds: workload.load.warmupSeconds,
      drainMs: Math.max(10_000, 5 * workload.sloP99Ms),
      send,
      onProgress: (p) => {
        progress(label, workload.load.stepSeconds, p);
      },
    });
    const wallUs = (performance.now() - started) * 1000;
    const after = await harness.counters();
    const changesAfter = await harness.residencyChanges?.();
    const perMin = (n: number): number => (n * 60e6) / wallUs;
    const batches = after.batches - before.batches;
    const each = after.busyUsEach
      .map((busy, a) => (busy - (before.busyUsEach[a] ?? 0)) / wallUs)
      .sort((a, b) => a - b);
    const step = {
      ...result,
      utilization: (after.busyUs - before.busyUs) / (harness.accelerators * wallUs),
      ...(each.length === 0
        ? {}
        : {
            utilizationSpread: {
              p10: quantile(each, 0.1),
              p50: quantile(each, 0.5),
              p90: quantile(each, 0.9),
            },
          }),
      ...(batches > 0 ? { batchFill: (after.items - before.items) / batches } : {}),
      window: { from: startedAt, to: new Date().toISOString() },
      ...(changesBefore === undefined || changesAfter === undefined
        ? {}
        : {
            residencyPerMin: {
              loads: perMin(changesAfter.loads - changesBefore.loads),
              unloads: perMin(changesAfter.unloads - changesBefore.unloads),
            },
          }),
    };
    steps.push(step);
    if (process.stderr.isTTY) process.stderr.write("\n");
    console.error(
      `[bench] ${label} ${rate} req/s: achieved ${step.achievedRps.toFixed(1)} req/s, ` +
        `${step.achievedTokensPerS.toFixed(0)} tokens/s, p99 ${step.latencyMs.p99.toFixed(0)} ms, ` +
        `failed ${step.failed}, utilization ${(step.utilization * 100).toFixed(0)} %` +
        (step.residencyPerMin === undefined
          ? ""
          : `, loads ${step.residencyPerMin.loads.toFixed(1)}/min, unloads ${step.residencyPerMin.unloads.toFixed(1)}/min`),
    );
    misses = kneeMiss(step, { sloP99Ms: workload.sloP99Ms }) === undefined ? 0 : misses + 1;
    if (misses >= 2) break;
  }
  const knee = findKnee(steps, { sloP99Ms: workload.sloP99Ms });
  const at = steps[knee.index];
  return {
    knee_rps: at?.achievedRps ?? 0,
    knee_offered_rps: at?.offeredRps ?? 0,
    knee_tokens_per_s: at?.achievedTokensPerS ?? 0,
    p50_ms_at_knee: at?.latencyMs.p50 ?? null,
    p90_ms_at_knee: at?.latencyMs.p90 ?? null,
    p99_ms_at_knee: at?.latencyMs.p99 ?? null,
    utilization_at_knee: at?.utilization ?? null,
    utilization_distribution_at_knee: at?.utilizationSpread ?? null,
    inputs_per_batch_at_knee: at?.batchFill ?? null,
    first_miss:
      knee.firstMiss === undefined
        ? null
        : { offered_rps: steps[knee.firstMiss.index]?.offeredRps, reason: knee.firstMiss.reason },
    steps,
  };
}

/** A step as result.json writes it, in the file's snake_case. */
export function stepJson(s: SweptStep): Record<string, unknown> {
  return {
    offered_rps: s.offeredRps,
    sent: s.sent,
    sent_rps: s.sentRps,
    achieved_rps: s.achievedRps,
    achieved_tokens_per_s: s.achievedTokensPerS,
    failed: s.failed,
    latency_ms: s.latencyMs,
    utilization: s.utilization ?? null,
    utilization_distribution: s.utilizationSpread ?? null,
    residency_per_min: s.residencyPerMin ?? null,
    inputs_per_batch: s.batchFill ?? null,
    phases_ms: s.phasesMs ?? null,
    p99_by_second_ms: s.p99BySecondMs ?? null,
    window: s.window,
  };
}
