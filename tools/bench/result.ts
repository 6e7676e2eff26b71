/**
 * A bench run's `result.json` and its two charts: pull's knee at the top level (Shoal's own
 * mode), every mode's steps under `modes`, and whatever the scenario adds.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Workload } from "@shoal/loadgen";
import { writeCharts } from "./charts.js";
import { stepJson, type ModeResult } from "./sweep.js";

export async function writeResult(
  out: string,
  scenario: string,
  workload: Workload,
  rates: readonly number[],
  modes: Readonly<Record<string, ModeResult>>,
  extra: Readonly<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const pull = modes["pull"];
  if (pull === undefined) throw new Error("writeResult: a bench run always has a pull mode");
  const result: Record<string, unknown> = {
    scenario,
    workload: workload.name,
    slo_p99_ms: workload.sloP99Ms,
    step_seconds: workload.load.stepSeconds,
    warmup_seconds: workload.load.warmupSeconds,
    ...pull,
    steps: undefined,
    ...extra,
    modes: Object.fromEntries(
      Object.entries(modes).map(([name, m]) => [name, { ...m, steps: m.steps.map(stepJson) }]),
    ),
  };
  await writeFile(join(out, "result.json"), JSON.stringify(result, null, 2) + "\n");
  const mark =
    pull.knee_offered_rps > 0
      ? { x: pull.knee_offered_rps, label: `pull knee ${pull.knee_offered_rps} req/s` }
      : undefined;
  const shown = Object.entries(modes).filter(
    ([name]) => name === "pull" || name === extra["best_router"] || name === extra["naive_router"],
  );
  await writeCharts(out, workload.name, workload, rates, shown, mark);
  return result;
}
