import type { ModelEntry } from "@shoal/config";
import type { LoadOptions, SidecarClient } from "@shoal/sidecar-client";

/**
 * What a `load` of `entry` asks the sidecar for beyond the path: the catalog's simulated-model
 * parameters when the sidecar is simulated, the serving `dtype` when it computes with Candle
 * (each runtime refuses the other's options), and a timeout.
 */
export async function loadOptionsFor(
  client: SidecarClient,
  entry: ModelEntry,
  timeoutMs?: number,
): Promise<LoadOptions> {
  const timeout = timeoutMs === undefined ? {} : { timeoutMs };
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
