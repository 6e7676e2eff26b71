import type { SidecarClient } from "@shoal/sidecar-client";

/** A cluster a bench scenario runs against. */
export interface Harness {
  /** Where the ingress serves REST. */
  readonly baseUrl: string;
  /** Accelerators (sidecars) serving the scenario's models. */
  readonly accelerators: number;
  /** A connection to the first worker's sidecar, for the raw-throughput denominator. */
  readonly sidecar?: SidecarClient;
  /** Busy time summed over every sidecar's models since start, µs. */
  busyUs(): Promise<number>;
  stop(): Promise<void>;
}
