import { natsAuthFromEnv } from "@shoal/jetstream";
import { blobStoreFromEnv } from "@shoal/blobs";
import {
  bootService,
  envInt,
  envOptional,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run } from "./run.js";

const env = process.env;
const booted = bootService("blob-offloader", env);
try {
  const offloader = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    store: blobStoreFromEnv(env),
    offloaderId: envOptional(env, "SHOAL_OFFLOADER_ID"),
    maxBlobBytes: envInt(env, "SHOAL_BLOB_MAX_BYTES"),
    storeMaxBytes: envInt(env, "SHOAL_BLOB_STORE_MAX_BYTES"),
    ttlMs: envInt(env, "SHOAL_BLOB_TTL_MS"),
    sweepIntervalMs: envInt(env, "SHOAL_BLOB_SWEEP_MS"),
    idleTimeoutMs: envInt(env, "SHOAL_BLOB_IDLE_MS"),
    metrics: booted.metrics,
    logger: booted.logger,
    readiness: booted.readiness,
    tracer: booted.tracing.tracer,
  });
  booted.readiness.started();
  exitOnSignal(() => offloader.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
