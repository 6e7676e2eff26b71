/**
 * The real cluster on this machine for the bench: nats-server, the ingress service on a free port, and one worker service whose sidecar computes with Candle, each
 * its own process as `npm start` runs them. The bench reaches it over REST like any client.
 * Ingress is stateless, so a faster accelerator is fed by more ingress processes on one queue
 * (`ingresses`), as a deployment would scale it. Services log at info: their readiness lines
 * are info lines.
 */
import { join } from "node:path";
import { SidecarClient } from "@shoal/sidecar-client";
import {
  freePort,
  sidecarBinary,
  startNatsServer,
  startService,
  tempDir,
  type ServiceHandle,
} from "@shoal/testing";
import { sumCounters, type Harness } from "./harness.js";

export interface RealClusterOptions {
  /** Catalog ids the worker serves. */
  readonly models: readonly string[];
  /** Extra environment for the worker (serving parameters under test). */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /** `SHOAL_BUNDLE` for the worker and ingress: a bundle file, or `none` for the defaults. */
  readonly bundle?: string;
  /**
   * `SHOAL_DEVICE` for the worker's sidecar (`cpu`, `cuda:0`); ingress gets it too, so both
   * pick the same hardware's bundle. @default "cpu"
   */
  readonly device?: string;
  /** Ingress processes, each on its own port. @default 1 */
  readonly ingresses?: number;
}

export async function startRealCluster(options: RealClusterOptions): Promise<Harness> {
  const dir = await tempDir("bench-cluster");
  const nats = await startNatsServer();
  const ports: number[] = [];
  const socketPath = join(dir, "sidecar.sock");
  const services: ServiceHandle[] = [];
  const bundleEnv: Record<string, string> = {
    SHOAL_DEVICE: options.device ?? "cpu",
    ...(options.bundle === undefined ? {} : { SHOAL_BUNDLE: options.bundle }),
  };
  try {
    services.push(
      await startService("worker", {
        env: {
          NATS_URL: nats.url,
          SHOAL_SIDECAR_BIN: sidecarBinary(),
          SHOAL_SIDECAR_SOCKET: socketPath,
          SHOAL_WORKER_MODELS: options.models.join(","),
          LOG_LEVEL: "info",
          ...bundleEnv,
          ...options.workerEnv,
        },
        readyMessage: "worker pulling",
        readyTimeoutMs: 300_000,
      }),
    );
    for (let i = 0; i < (options.ingresses ?? 1); i++) {
      const port = await freePort();
      services.push(
        await startService("ingress", {
          env: {
            NATS_URL: nats.url,
            SHOAL_PORT: String(port),
            SHOAL_HOST: "127.0.0.1",
            LOG_LEVEL: "info",
            ...bundleEnv,
          },
          readyMessage: "ingress listening",
        }),
      );
      ports.push(port);
    }
  } catch (err) {
    for (const s of services.reverse()) await s.stop();
    await nats.stop();
    throw err;
  }
  const sidecar = await SidecarClient.connect({ socketPath, requestTimeoutMs: 600_000 });
  return {
    baseUrls: ports.map((port) => `http://127.0.0.1:${port}`),
    natsUrl: nats.url,
    accelerators: 1,
    sidecar,
    counters: () => sumCounters([sidecar]),
    async stop() {
      await sidecar.close();
      for (const s of services.reverse()) await s.stop();
      await nats.stop();
    },
  };
}
