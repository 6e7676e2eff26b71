import { availableParallelism } from "node:os";
import type { ModelEntry } from "@shoal/config";

/**
 * The sidecar's environment with `SHOAL_SIDECAR_COMPUTE_THREADS` filled in when the operator
 * set none and a served model runs on several threads (`serving.modelThreads`): the cores
 * shared among that many threads, so each of a model's batches computes on cores of its own
 * instead of all of them splitting every batch across every core (docs/architecture.md).
 * Left as it is when no model asks for more than one thread (one batch at a time uses every
 * core), and when the sidecar also serves a generator: the setting is the whole sidecar's, and
 * a generator's one batch of sequences needs every core, while a batch model's threads gain
 * nothing from sharing them but lose nothing either (docs/benchmarks.md).
 */
export function withComputeThreads(
  env: Readonly<Record<string, string | undefined>>,
  models: readonly ModelEntry[],
  cores: number = availableParallelism(),
): Readonly<Record<string, string | undefined>> {
  if (env["SHOAL_SIDECAR_COMPUTE_THREADS"] !== undefined) return env;
  if (models.some((m) => m.family === "generator")) return env;
  const threads = Math.max(1, ...models.map((m) => m.serving?.modelThreads ?? 1));
  if (threads === 1) return env;
  return {
    ...env,
    SHOAL_SIDECAR_COMPUTE_THREADS: String(Math.max(1, Math.floor(cores / threads))),
  };
}
