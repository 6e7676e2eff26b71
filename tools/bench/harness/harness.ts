import type { SidecarClient } from "@shoal/sidecar-client";

/** A cluster a bench scenario runs against. */
export interface Harness {
  /** Where each of the cluster's ingress processes serves; load is spread over them. */
  readonly baseUrls: readonly string[];
  /** The cluster's nats-server. */
  readonly natsUrl: string;
  /** Accelerators (sidecars) serving the scenario's models. */
  readonly accelerators: number;
  /** A connection to the first worker's sidecar, for the raw-throughput denominator. */
  readonly sidecar?: SidecarClient;
  /** Every sidecar's model counters since start, summed. */
  counters(): Promise<SidecarCounters>;
  stop(): Promise<void>;
}

/** What the sidecars have done since they started, summed over sidecars and models. */
export interface SidecarCounters {
  /** Time spent computing batches, µs. */
  readonly busyUs: number;
  readonly batches: number;
  /** Inputs in those batches. */
  readonly items: number;
}

/** Sums the `stats` counters of `sidecars`. */
export async function sumCounters(sidecars: readonly SidecarClient[]): Promise<SidecarCounters> {
  let busyUs = 0;
  let batches = 0;
  let items = 0;
  for (const sidecar of sidecars) {
    for (const m of (await sidecar.stats()).models) {
      busyUs += m.busyUs;
      batches += m.batches;
      items += m.items;
    }
  }
  return { busyUs, batches, items };
}
