import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envOptional,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run } from "./run.js";
import { accessMode } from "@shoal/tenants";

const env = process.env;
const booted = bootService("lora-registry", env);
try {
  const host = envOptional(env, "SHOAL_REGISTRY_HOST");
  const registry = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    catalog: await catalogFromEnv(env),
    port: envInt(env, "SHOAL_REGISTRY_PORT"),
    host,
    access: accessMode("lora registry", host ?? "127.0.0.1", envOptional(env, "SHOAL_AUTH")),
    maxUploadBytes: envInt(env, "SHOAL_REGISTRY_MAX_UPLOAD_BYTES"),
    idleTimeoutMs: envInt(env, "SHOAL_REGISTRY_IDLE_TIMEOUT_MS"),
    maxRank: envInt(env, "SHOAL_REGISTRY_MAX_RANK"),
    maxConcurrentUploads: envInt(env, "SHOAL_REGISTRY_MAX_UPLOADS"),
    storeMaxBytes: envInt(env, "SHOAL_REGISTRY_STORE_MAX_BYTES"),
    modelSources: { env },
    metrics: booted.metrics,
    tracer: booted.tracing.tracer,
    logger: booted.logger,
    readiness: booted.readiness,
  });
  booted.readiness.started();
  exitOnSignal(() => registry.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
