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
import { run } from "./run.js";

const env = process.env;
const booted = bootService("worker", env);
try {
  const catalog = await catalogFromEnv(env);
  const worker = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
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
    sidecarEnv: { ...env, OTEL_SERVICE_NAME: env["OTEL_SIDECAR_SERVICE_NAME"] ?? "shoal-sidecar" },
    modelSources: { env },
    logger: booted.logger,
    tracer: booted.tracing.tracer,
  });
  exitOnSignal(() => worker.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
