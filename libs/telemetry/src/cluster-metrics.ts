import cluster from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

/** What a metrics server serves: one registry, or the sum of a supervisor's replicas'. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

/**
 * In a replica (a `node:cluster` worker): keeps `registry` for the supervisor to collect at
 * each scrape, since replicas of one service cannot all serve the one metrics port.
 */
export function reportToSupervisor(registry: Registry): void {
  // Constructing one installs the replica's answer to its supervisor's requests.
  const answers = new AggregatorRegistry();
  answers.setContentType(registry.contentType);
  AggregatorRegistry.setRegistries([registry]);
}

/**
 * In a supervisor: while it has replicas, the sum of their registries (counters and
 * histograms added; gauges as each declares, e.g. `aggregator: "max"` for a figure every
 * replica reads alike); without replicas, `own`.
 */
export function supervisedMetrics(own: Registry): MetricsSource {
  const replicas = new AggregatorRegistry();
  return {
    contentType: own.contentType,
    metrics: () =>
      Object.keys(cluster.workers ?? {}).length > 0 ? replicas.clusterMetrics() : own.metrics(),
  };
}
