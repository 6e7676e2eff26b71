import type { Registry } from "prom-client";
import { trace } from "@opentelemetry/api";
import { createLogger, type Tracing } from "@shoal/telemetry";
import {
  defaultCatalog,
  sidecarBinary,
  startNatsServer,
  startService,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { run, type RunningIngress } from "../../src/run.js";

export const MINILM = "sentence-transformers/all-MiniLM-L6-v2";

export interface TestCluster {
  readonly nats: NatsServerHandle;
  readonly worker: ServiceHandle;
  readonly ingress: RunningIngress;
  readonly baseUrl: string;
  stop(): Promise<void>;
}

export interface TestClusterOptions {
  /** Environment for the worker process (OTLP settings, ack wait…). */
  readonly env?: Readonly<Record<string, string>>;
  readonly tracing?: Tracing;
  readonly maxBodyBytes?: number;
  /** Where ingress registers its request metrics. */
  readonly metrics?: Registry;
}

/**
 * A real single-node cluster: nats-server, the worker service as its own process (with its
 * sidecar and the real MiniLM weights), and ingress in this process so tests can look at its
 * state.
 */
export async function startCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const nats = await startNatsServer();
  const env = {
    NATS_URL: nats.url,
    SHOAL_SIDECAR_BIN: sidecarBinary(),
    LOG_LEVEL: "info",
    ...options.env,
  };
  const worker = await startService("worker", { env, readyMessage: "worker pulling" });
  const ingress = await run({
    natsServers: nats.url,
    catalog: defaultCatalog(),
    port: 0,
    maxBodyBytes: options.maxBodyBytes,
    logger: createLogger({ service: "ingress", level: "warn" }),
    tracer: options.tracing?.tracer ?? trace.getTracer("test"),
    metrics: options.metrics,
  });
  return {
    nats,
    worker,
    ingress,
    baseUrl: `http://127.0.0.1:${ingress.port}`,
    async stop() {
      await ingress.stop();
      await worker.stop();
      await nats.stop();
    },
  };
}
