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
  /** With dynamic residency: models loaded and unloaded so far by whoever places them. */
  residencyChanges?(): Promise<{ readonly loads: number; readonly unloads: number }>;
  stop(): Promise<void>;
}

/** What the sidecars have done since they started, summed over sidecars and models. */
export interface SidecarCounters {
  /** Time spent computing batches, µs. */
  readonly busyUs: number;
  /** The same, for each sidecar (accelerator) in turn. */
  readonly busyUsEach: readonly number[];
  readonly batches: number;
  /** Inputs in those batches. */
  readonly items: number;
}

/** Sums the `stats` counters of `sidecars`, one sidecar per accelerator. */
export async function sumCounters(sidecars: readonly SidecarClient[]): Promise<SidecarCounters> {
  let batches = 0;
  let items = 0;
  const busyUsEach: number[] = [];
  for (const sidecar of sidecars) {
    const stats = await sidecar.stats();
    let busy = 0;
    for (const m of stats.models) {
      busy += m.busyUs;
      batches += m.batches;
      items += m.items;
    }
    // On a shared simulated device the models' busy times overlap (each counts its waits for
    // the device); the device's own is the accelerator's.
    busyUsEach.push(stats.deviceBusyUs ?? busy);
  }
  return { busyUs: busyUsEach.reduce((a, b) => a + b, 0), busyUsEach, batches, items };
}
