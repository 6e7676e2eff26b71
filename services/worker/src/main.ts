import { natsAuthFromEnv } from "@shoal/jetstream";
import { blobStoreFromEnv } from "@shoal/blobs";
import { adaptersDir, ConfigError } from "@shoal/config";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envList,
  envOptional,
  envRequired,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run, type WorkerResidencyOptions } from "./run.js";

const env = process.env;

/** A model-loader manages this worker when its node is named (docs/model-loader.md). */
function residencyFromEnv(): WorkerResidencyOptions | undefined {
  const node = envOptional(env, "SHOAL_NODE_ID");
  if (node === undefined) return undefined;
  const capacityBytes = envInt(env, "SHOAL_WORKER_MEMORY_BYTES");
  if (capacityBytes === undefined || capacityBytes < 1) {
    throw new ConfigError("SHOAL_WORKER_MEMORY_BYTES must be set (bytes) with SHOAL_NODE_ID");
  }
  return { node, capacityBytes, heartbeatMs: envInt(env, "SHOAL_HEARTBEAT_MS") };
}
function workSourceFromEnv(): "shared" | "routed" {
  const source = envString(env, "SHOAL_WORK_SOURCE", "shared");
  if (source !== "shared" && source !== "routed") {
    throw new ConfigError(`SHOAL_WORK_SOURCE must be shared or routed, got "${source}"`);
  }
  return source;
}
const booted = bootService("worker", env);
try {
  const catalog = await catalogFromEnv(env);
  const worker = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    catalog,
    models: envList(env, "SHOAL_WORKER_MODELS"),
    sidecarBinary: envRequired(env, "SHOAL_SIDECAR_BIN"),
    sidecarSocket: envOptional(env, "SHOAL_SIDECAR_SOCKET"),
    device: envOptional(env, "SHOAL_DEVICE"),
    workerId: envOptional(env, "SHOAL_WORKER_ID"),
    budget: {
      maxPaddedTokens: envInt(env, "SHOAL_BATCH_MAX_PADDED_TOKENS"),
      maxInputs: envInt(env, "SHOAL_BATCH_MAX_INPUTS"),
    },
    batchTargetMs: envInt(env, "SHOAL_BATCH_TARGET_MS"),
    maxFillWaitMs: envInt(env, "SHOAL_MAX_FILL_WAIT_MS"),
    consumer: { ackWaitMs: envInt(env, "SHOAL_ACK_WAIT_MS") },
    batchTimeoutMs: envInt(env, "SHOAL_BATCH_TIMEOUT_MS"),
    maxDeliver: envInt(env, "SHOAL_MAX_DELIVER"),
    maxBatchesInFlight: envInt(env, "SHOAL_BATCHES_IN_FLIGHT"),
    deviceBatches: envInt(env, "SHOAL_WORKER_DEVICE_BATCHES"),
    localQueueSocket: envOptional(env, "SHOAL_LOCAL_QUEUE_SOCKET"),
    workSource: workSourceFromEnv(),
    sidecarEnv: { ...env, OTEL_SERVICE_NAME: env["OTEL_SIDECAR_SERVICE_NAME"] ?? "shoal-sidecar" },
    modelSources: { env },
    adaptersDir: adaptersDir(env),
    maxAdaptersPerModel: envInt(env, "SHOAL_MAX_ADAPTERS_PER_MODEL"),
    blobStore: blobStoreFromEnv(env),
    residency: residencyFromEnv(),
    generation: {
      maxSequences: envInt(env, "SHOAL_MAX_SEQUENCES"),
      stallTimeoutMs: envInt(env, "SHOAL_STREAM_STALL_MS"),
    },
    logger: booted.logger,
    readiness: booted.readiness,
    tracer: booted.tracing.tracer,
    metrics: booted.metrics,
  });
  booted.readiness.started();
  exitOnSignal(() => worker.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
