/**
 * The two plots every bench run writes beside its result.json: throughput against offered
 * load (with the offered diagonal) and p50/p99 latency against offered load (with the SLO), one
 * line per mode shown, the knee marked when there is one.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { lineChart, type Workload } from "@shoal/loadgen";
import type { ModeResult } from "./sweep.js";

export async function writeCharts(
  out: string,
  title: string,
  workload: Workload,
  rates: readonly number[],
  shown: readonly (readonly [string, ModeResult])[],
  mark?: { readonly x: number; readonly label: string },
): Promise<void> {
  const marked = mark === undefined ? {} : { mark };
  await writeFile(
    join(out, "throughput.svg"),
    lineChart({
      title: `${title}: throughput vs offered load`,
      xLabel: "offered load (requests/s)",
      yLabel: "achieved (requests/s)",
      series: [
        ...shown.map(([name, m]) => ({
          name,
          points: m.steps.map((s) => [s.offeredRps, s.achievedRps] as const),
        })),
        { name: "offered", points: rates.map((r) => [r, r] as const) },
      ],
      ...marked,
    }),
  );
  await writeFile(
    join(out, "latency.svg"),
    lineChart({
      title: `${title}: latency vs offered load`,
      xLabel: "offered load (requests/s)",
      yLabel: "latency (ms)",
      series: shown.flatMap(([name, m]) =>
        (["p50", "p99"] as const).map((p) => ({
          name: `${name} ${p}`,
          points: m.steps.map((s) => [s.offeredRps, s.latencyMs[p]] as const),
        })),
      ),
      hline: { y: workload.sloP99Ms, label: `SLO p99 ${workload.sloP99Ms} ms` },
      ...marked,
    }),
  );
}
