import type { ModelEntry } from "@shoal/config";
import type { LoadOptions, SidecarClient } from "@shoal/sidecar-client";

/**
 * What a `load` of `entry` asks the sidecar for beyond the path: the catalog's simulated-model
 * parameters when the sidecar is simulated (a real backend refuses them), and a timeout.
 */
export async function loadOptionsFor(
  client: SidecarClient,
  entry: ModelEntry,
  timeoutMs?: number,
): Promise<LoadOptions> {
  const sim = entry.sim !== undefined && (await client.health()).backend === "sim";
  return {
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(sim ? { sim: entry.sim } : {}),
  };
}
