import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { StepResult } from "@shoal/loadgen";
import { shoalHome } from "@shoal/testing";

const run = promisify(execFile);

/** What the generator printed for one step (tools/openloop's JSON). */
export interface GeneratorStep {
  readonly offered_rps: number;
  readonly sent: number;
  readonly sent_rps: number;
  readonly answered: number;
  readonly achieved_rps: number;
  readonly failed: number;
  readonly failed_by: Record<string, number>;
  /** Refusals that carried `Retry-After`. */
  readonly retry_after: number;
  readonly latency_ms: StepResult["latencyMs"];
  readonly send_lag_ms: StepResult["latencyMs"];
  readonly cpu_us: number;
  readonly total_answered: number;
  readonly total_cpu_us: number;
  readonly first_error?: string;
}

/** One step of `tools/openloop` (built by `npm run prebench`), its flags as `-name=value`. */
export async function openloop(flags: readonly string[]): Promise<GeneratorStep> {
  const binary = join(process.env["SHOAL_BIN"] ?? join(shoalHome(), "bin"), "shoal-openloop");
  const { stdout } = await run(binary, [...flags], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as GeneratorStep;
}
