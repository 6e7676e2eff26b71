import type { ModelStats, SidecarClient, StatsResult } from "@shoal/sidecar-client";
import { perScrape, type Logger } from "@shoal/telemetry";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * The sidecar's own counters, per resident model, read with one `stats` call when scraped
 * (nothing on the batch path). `busy_seconds_total` over time is a model's busy fraction; it
 * can exceed 1 a second for a model on several threads. The counters restart from zero when
 * the sidecar does, as Prometheus expects of a restarted process.
 */
export function registerSidecarMetrics(
  registry: Registry,
  sidecar: () => Promise<SidecarClient>,
  logger: Logger,
): void {
  const stats = perScrape(
    (): Promise<StatsResult | undefined> =>
      sidecar()
        .then((client) => client.stats({ timeoutMs: 2_000 }))
        .catch((err: unknown) => {
          // Restarting, or stalled: this scrape has no sidecar figures, the next may.
          logger.debug({ err }, "sidecar metrics: stats unavailable");
          return undefined;
        }),
  );
  const perModel = (
    kind: "counter" | "gauge",
    name: string,
    help: string,
    value: (m: ModelStats) => number | undefined,
  ): void => {
    const options = { name, help, labelNames: ["model"] as const, registers: [registry] };
    async function collect(this: Counter<"model"> | Gauge<"model">): Promise<void> {
      this.reset();
      for (const m of (await stats())?.models ?? []) {
        const v = value(m);
        if (v === undefined) continue;
        if (this instanceof Counter) this.inc({ model: m.model }, v);
        else this.set({ model: m.model }, v);
      }
    }
    if (kind === "counter") new Counter({ ...options, collect });
    else new Gauge({ ...options, collect });
  };
  perModel(
    "counter",
    "shoal_sidecar_busy_seconds_total",
    "Time the model's threads spent running batches or decode steps.",
    (m) => m.busyUs / 1e6,
  );
  perModel(
    "counter",
    "shoal_sidecar_batches_total",
    "Batches run (decode steps for a generator).",
    (m) => m.batches,
  );
  perModel(
    "counter",
    "shoal_sidecar_items_total",
    "Inputs, pairs or sequences done.",
    (m) => m.items,
  );
  perModel(
    "counter",
    "shoal_sidecar_tokens_total",
    "Tokens processed (prompt and generated for a generator).",
    (m) => m.tokens,
  );
  perModel(
    "counter",
    "shoal_sidecar_generated_tokens_total",
    "Tokens a generator produced.",
    (m) => m.generatedTokens,
  );
  perModel(
    "gauge",
    "shoal_sidecar_model_memory_bytes",
    "Memory the model's weights hold.",
    (m) => m.memoryBytes,
  );
  perModel(
    "gauge",
    "shoal_sidecar_active_sequences",
    "Sequences a generator is decoding now.",
    (m) => m.activeSequences,
  );
  perModel(
    "gauge",
    "shoal_sidecar_adapters",
    "LoRA adapters loaded for a generator.",
    (m) => m.adapters?.length,
  );
}
