import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envOptional,
  envString,
  exitOnSignal,
  failStart,
  superviseReplicas,
} from "@shoal/process";
import { accessMode } from "@shoal/tenants";
import { run } from "./run.js";
import { tlsFromEnv } from "./tls-files.js";

const env = process.env;
const booted = bootService("ingress", env);
const processes = envInt(env, "SHOAL_INGRESS_PROCESSES") ?? 1;
if (processes > 1 && superviseReplicas(processes, booted) === "supervisor") {
  // This process only supervises: the replicas serve the port, each with its own NATS
  // connection; the supervisor's /readyz says only that it runs them.
  booted.readiness.started();
} else {
  await serve();
}

async function serve(): Promise<void> {
  try {
    const catalog = await catalogFromEnv(env);
    const host = envOptional(env, "SHOAL_HOST");
    const access = accessMode("ingress", host ?? "127.0.0.1", envOptional(env, "SHOAL_AUTH"));
    const tls = await tlsFromEnv(env);
    const ingress = await run({
      natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
      natsAuth: natsAuthFromEnv(env),
      catalog,
      port: envInt(env, "SHOAL_PORT"),
      host,
      access,
      tls,
      partMaxPaddedTokens: envInt(env, "SHOAL_PART_MAX_PADDED_TOKENS"),
      partMaxInputs: envInt(env, "SHOAL_PART_MAX_INPUTS"),
      maxBodyBytes: envInt(env, "SHOAL_MAX_BODY_BYTES"),
      offloadThresholdBytes: envInt(env, "SHOAL_OFFLOAD_THRESHOLD_BYTES"),
      defaultTimeoutMs: envInt(env, "SHOAL_DEFAULT_TIMEOUT_MS"),
      streamIdleTimeoutMs: envInt(env, "SHOAL_STREAM_IDLE_MS"),
      maxPending: envInt(env, "SHOAL_MAX_PENDING"),
      maxQueuedPerModel: envInt(env, "SHOAL_MAX_QUEUED_PER_MODEL"),
      logger: booted.logger,
      readiness: booted.readiness,
      tracer: booted.tracing.tracer,
      metrics: booted.metrics,
    });
    booted.readiness.started();
    exitOnSignal(() => ingress.stop(), booted);
  } catch (err) {
    failStart(booted, err);
  }
}
