/**
 * Adapters a workload names (`base:adapter` models), published to the cluster's registry
 * store before the bench starts: seeded synthetic LoRA adapters in PEFT's layout, rank 8 on
 * the attention projections, one seed per name, so every run serves the same weights.
 */
import { connect } from "@nats-io/transport-node";
import {
  AdapterStore,
  makeLoraAdapter,
  parseModelReference,
  readBaseShape,
  validateLoraAdapter,
} from "@shoal/adapters";
import type { Catalog } from "@shoal/config";
import type { Workload } from "@shoal/loadgen";

export async function publishWorkloadAdapters(
  natsUrl: string,
  catalog: Catalog,
  workload: Workload,
): Promise<string[]> {
  const named = [
    ...new Set(workload.mix.flatMap((m) => m.models).filter((model) => model.includes(":"))),
  ];
  if (named.length === 0) return [];
  const nc = await connect({ servers: natsUrl });
  try {
    const store = await AdapterStore.open(nc);
    for (const [index, model] of named.entries()) {
      const { base, adapter } = parseModelReference(model);
      const entry = catalog.find(base);
      if (entry === undefined || adapter === undefined) {
        throw new Error(`workload names ${model}, whose base is not in the catalog`);
      }
      const shape = await readBaseShape(entry.dir, entry.weights ?? "safetensors");
      const files = makeLoraAdapter(shape, {
        targetModules: ["q_proj", "k_proj", "v_proj", "o_proj"],
        seed: index + 1,
      });
      const summary = validateLoraAdapter(files, shape);
      await store.publish({
        base: { id: entry.id, key: entry.key },
        name: adapter.name,
        owner: "bench",
        files,
        summary,
      });
    }
  } finally {
    await nc.close();
  }
  return named;
}
