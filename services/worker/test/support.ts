import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { Annotator } from "@shoal/annotation";
import { Gateway } from "@shoal/gateway";
import { ensureWorkStream, StreamPublisher } from "@shoal/jetstream";
import { compileCatalog } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import {
  defaultCatalog,
  sidecarBinary,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";

export const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
export const MINILM_CONSUMER = "work-all-minilm-l6-v2";

/**
 * The pipeline around a worker under test: nats-server, and ingress's gateway with an
 * in-process annotator (the libs ingress is made of). Workers run as their own processes, the
 * way the cluster runs them, so tests can kill, stop and restart them.
 */
export interface Pipeline {
  readonly nats: NatsServerHandle;
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly gateway: Gateway;
  startWorker(id: string, env?: Readonly<Record<string, string>>): Promise<ServiceHandle>;
  stop(): Promise<void>;
}

export interface PipelineOptions {
  /** Requests the gateway holds at once before it refuses more. @default 10000 */
  readonly maxPending?: number;
  /**
   * Inputs one work message may carry (a part, or requests queued together). 1 gives every
   * single-input request its own message, for tests that follow messages one by one.
   * @default 64
   */
  readonly partMaxInputs?: number;
  /** `inputs × longest` one work message may carry, in estimated tokens. @default 8192 */
  readonly partMaxPaddedTokens?: number;
  /**
   * A catalog document for the gateway and every worker (`SHOAL_CATALOG`) instead of the
   * default catalog: for tests of simulated models.
   */
  readonly catalogDocument?: { readonly models: readonly object[] };
}

export async function startPipeline(options: PipelineOptions = {}): Promise<Pipeline> {
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await ensureWorkStream(jsm);
  let catalog = defaultCatalog();
  const catalogEnv: Record<string, string> = {};
  if (options.catalogDocument !== undefined) {
    const dir = await tempDir("worker-catalog");
    catalogEnv["SHOAL_CATALOG"] = join(dir, "catalog.json");
    await writeFile(catalogEnv["SHOAL_CATALOG"], JSON.stringify(options.catalogDocument));
    catalog = compileCatalog(options.catalogDocument, { modelsDir: join(dir, "models") });
  }
  const logger = createLogger({ service: "test", level: "warn" });
  const gateway = await Gateway.start({
    nc,
    catalog,
    logger,
    defaultTimeoutMs: 60_000,
    maxPending: options.maxPending,
    annotator: new Annotator({
      catalog,
      publisher: new StreamPublisher(nc),
      logger,
      tracer: trace.getTracer("test"),
      partMaxInputs: options.partMaxInputs,
      partMaxPaddedTokens: options.partMaxPaddedTokens,
    }),
  });
  const workers: ServiceHandle[] = [];
  return {
    nats,
    nc,
    jsm,
    gateway,
    async startWorker(id, env = {}) {
      const worker = await startService("worker", {
        env: {
          NATS_URL: nats.url,
          SHOAL_SIDECAR_BIN: sidecarBinary(),
          SHOAL_WORKER_ID: id,
          ...catalogEnv,
          ...env,
        },
        readyMessage: "worker pulling",
      });
      workers.push(worker);
      return worker;
    },
    async stop() {
      for (const w of workers) await w.stop();
      await gateway.close();
      await nc.close();
      await nats.stop();
    },
  };
}

/**
 * The most batches the worker held handed to the sidecar and not yet answered at once, from its
 * "batch started" and "batch answered" debug lines (µs of its wall clock), whatever their model.
 */
export function mostBatchesInFlight(output: string): number {
  const events = output.split("\n").flatMap((line) => {
    try {
      // Each line is prefixed with the stream it came from.
      const l = JSON.parse(line.slice(line.indexOf("{"))) as { msg?: string; at_us?: number };
      if (l.msg === "batch started") return [{ at: Number(l.at_us), step: 1 }];
      if (l.msg === "batch answered") return [{ at: Number(l.at_us), step: -1 }];
    } catch {
      // not a log line
    }
    return [];
  });
  let now = 0;
  let most = 0;
  for (const e of events.sort((a, b) => a.at - b.at || a.step - b.step)) {
    now += e.step;
    most = Math.max(most, now);
  }
  return most;
}
