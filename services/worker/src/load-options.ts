import type { ModelEntry, OpenAiSource } from "@shoal/config";
import type { LoadOptions, OpenAiLoadOptions, SidecarClient } from "@shoal/sidecar-client";

/**
 * The `path` a `load` of `entry` sends: its directory, or none for a model on a remote engine
 * (the sidecar refuses a path with backend `openai`).
 */
export function loadPath(entry: ModelEntry): string | undefined {
  return entry.source.kind === "openai" ? undefined : entry.dir;
}

/**
 * What a `load` of `entry` asks the sidecar for beyond the path: the remote engine of an
 * `openai` model, the catalog's simulated-model parameters when the sidecar is simulated, the
 * serving `dtype` when it computes with Candle (each runtime refuses the other's options), and
 * a timeout.
 *
 * @param env where an `openai` source's `apiKeyEnv` is looked up.
 * @throws Error when that variable is not set, naming the model and the variable.
 */
export async function loadOptionsFor(
  client: SidecarClient,
  entry: ModelEntry,
  timeoutMs?: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<LoadOptions> {
  const timeout = timeoutMs === undefined ? {} : { timeoutMs };
  if (entry.source.kind === "openai") {
    return { ...timeout, backend: "openai", openai: remoteOf(entry, entry.source, env) };
  }
  const dtype = entry.serving?.dtype;
  const threads = entry.serving?.modelThreads;
  const threaded = threads === undefined || threads === 1 ? {} : { threads };
  if (entry.sim === undefined && dtype === undefined) return { ...timeout, ...threaded };
  const { backend } = await client.health();
  return {
    ...timeout,
    ...threaded,
    ...(entry.sim !== undefined && backend === "sim" ? { sim: entry.sim } : {}),
    ...(dtype !== undefined && backend.startsWith("candle") ? { dtype } : {}),
  };
}

function remoteOf(
  entry: ModelEntry,
  source: OpenAiSource,
  env: NodeJS.ProcessEnv,
): OpenAiLoadOptions {
  let apiKey: string | undefined;
  if (source.apiKeyEnv !== undefined) {
    apiKey = env[source.apiKeyEnv];
    if (apiKey === undefined || apiKey === "") {
      throw new Error(
        `${entry.id}: its remote engine's API key is read from ${source.apiKeyEnv}, ` +
          "which is not set in this worker's environment",
      );
    }
  }
  return {
    url: source.url,
    remoteModel: source.remoteModel,
    family: entry.family === "generator" ? "generate" : "embedding",
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(source.timeoutMs === undefined ? {} : { remoteTimeoutMs: source.timeoutMs }),
  };
}
