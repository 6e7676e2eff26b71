/**
 * A cluster of simulated accelerators on this machine for the scheduling benches: a real
 * nats-server, ingress's gateway with the in-process annotator, optionally the machine-local
 * queue, and N real worker processes whose sidecars run the simulated backend (`--backend
 * sim`, docs/simulated-backend.md). Workers log at debug, and the bench reads their
 * "put back" and "batch started" lines to follow items and batches.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { Annotator } from "@shoal/annotation";
import { Gateway } from "@shoal/gateway";
import { ensureWorkStream, StreamPublisher } from "@shoal/jetstream";
import { SidecarClient } from "@shoal/sidecar-client";
import { createLogger } from "@shoal/telemetry";
import {
  defaultCatalog,
  repoRoot,
  sidecarBinary,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { sumCounters } from "./harness/harness.js";

export { textOfTokens } from "./targets/text.js";

export const MODEL = "sentence-transformers/all-MiniLM-L6-v2";

/** A worker's debug line about a batch it started. */
export interface BatchStarted {
  readonly worker: string;
  readonly seqs: number[];
  readonly atUs: number;
  readonly inputs: number;
  readonly paddedTokens: number;
  readonly realTokens: number;
  readonly budgetPaddedTokens: number;
}

/** A worker's debug line about items it put back. */
export interface PutBack {
  readonly worker: string;
  readonly seqs: number[];
  readonly atUs: number;
  readonly local: number;
  readonly naked: number;
}

export interface SimCluster {
  readonly gateway: Gateway;
  readonly nc: NatsConnection;
  readonly batches: BatchStarted[];
  readonly putBacks: PutBack[];
  /** Busy time of every sidecar's models, µs (sidecar `stats`). */
  busyUs(): Promise<number>;
  stop(): Promise<void>;
}

export interface SimClusterOptions {
  readonly workers: number;
  readonly localQueue: boolean;
  /** Extra environment for every worker. */
  readonly workerEnv?: Readonly<Record<string, string>>;
  readonly localQueueEnv?: Readonly<Record<string, string>>;
}

export async function startSimCluster(options: SimClusterOptions): Promise<SimCluster> {
  const nats: NatsServerHandle = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  await ensureWorkStream(await jetstreamManager(nc));
  const catalog = defaultCatalog();
  const logger = createLogger({ service: "bench", level: "warn" });
  const gateway = await Gateway.start({
    nc,
    catalog,
    logger,
    defaultTimeoutMs: 60_000,
    maxPending: 100_000,
    annotator: new Annotator({
      catalog,
      publisher: new StreamPublisher(nc),
      logger,
      tracer: trace.getTracer("bench"),
    }),
  });
  const dir = await tempDir("bench");
  const queueSocket = join(dir, "local-queue.sock");
  let queue: ServiceHandle | undefined;
  if (options.localQueue) {
    queue = await startService("local-queue", {
      env: { NATS_URL: nats.url, SHOAL_LOCAL_QUEUE_SOCKET: queueSocket, ...options.localQueueEnv },
      readyMessage: "local queue listening",
    });
  }
  const batches: BatchStarted[] = [];
  const putBacks: PutBack[] = [];
  const children: ChildProcess[] = [];
  const sockets: string[] = [];
  for (let i = 0; i < options.workers; i++) {
    const id = `sim${i}`;
    const sidecarSocket = join(dir, `${id}.sock`);
    sockets.push(sidecarSocket);
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(repoRoot(), "services", "worker", "src", "main.ts")],
      {
        env: {
          ...process.env,
          NATS_URL: nats.url,
          SHOAL_SIDECAR_BIN: sidecarBinary(),
          SHOAL_SIDECAR_BACKEND: "sim",
          SHOAL_SIDECAR_SOCKET: sidecarSocket,
          SHOAL_WORKER_ID: id,
          SHOAL_WORKER_MODELS: MODEL,
          LOG_LEVEL: "debug",
          ...(options.localQueue ? { SHOAL_LOCAL_QUEUE_SOCKET: queueSocket } : {}),
          ...options.workerEnv,
        },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once("exit", (code) => {
        reject(new Error(`worker ${id} exited with ${String(code)} before it was ready`));
      });
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
        let log: Record<string, unknown>;
        try {
          log = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (log["msg"] === "worker pulling") resolve();
        else if (log["msg"] === "batch started") {
          batches.push({
            worker: id,
            seqs: log["seqs"] as number[],
            atUs: log["at_us"] as number,
            inputs: log["inputs"] as number,
            paddedTokens: log["padded_tokens"] as number,
            realTokens: log["real_tokens"] as number,
            budgetPaddedTokens: log["budget_padded_tokens"] as number,
          });
        } else if (log["msg"] === "put back") {
          putBacks.push({
            worker: id,
            seqs: log["seqs"] as number[],
            atUs: log["at_us"] as number,
            local: log["local"] as number,
            naked: log["naked"] as number,
          });
        }
      });
    });
  }
  const clients = await Promise.all(
    sockets.map((socketPath) => SidecarClient.connect({ socketPath })),
  );
  return {
    gateway,
    nc,
    batches,
    putBacks,
    async busyUs() {
      return (await sumCounters(clients)).busyUs;
    },
    async stop() {
      for (const c of clients) await c.close();
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) {
                resolve();
                return;
              }
              child.once("exit", () => {
                resolve();
              });
              child.kill("SIGTERM");
            }),
        ),
      );
      await queue?.stop();
      await gateway.close();
      await nc.close();
      await nats.stop();
    },
  };
}

export function quantile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}
