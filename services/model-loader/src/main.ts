import { restrictCatalog } from "@shoal/config";
import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envList,
  envPercent,
  envOptional,
  envRequired,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run } from "./run.js";

const env = process.env;
const booted = bootService("model-loader", env);
try {
  // A node of a pool places only the pool's models (all of the catalog's when unset).
  const whole = await catalogFromEnv(env);
  const only = envList(env, "SHOAL_NODE_MODELS");
  const catalog = only === undefined || only.length === 0 ? whole : restrictCatalog(whole, only);
  const loader = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    catalog,
    node: envRequired(env, "SHOAL_NODE_ID"),
    policy: {
      minResidencyMs: envInt(env, "SHOAL_MIN_RESIDENCY_MS"),
      idleDropMs: envInt(env, "SHOAL_IDLE_DROP_MS"),
      replicateAbovePending: envInt(env, "SHOAL_REPLICATE_ABOVE_PENDING"),
      spareCopies: envInt(env, "SHOAL_SPARE_COPIES"),
      spareWindowMs: envInt(env, "SHOAL_SPARE_WINDOW_MS"),
      headroomBytes: envInt(env, "SHOAL_HEADROOM_BYTES"),
      headroomFraction: envPercent(env, "SHOAL_HEADROOM_PERCENT"),
    },
    tickMs: envInt(env, "SHOAL_LOADER_TICK_MS"),
    heartbeatMs: envInt(env, "SHOAL_HEARTBEAT_MS"),
    failureCooldownMs: envInt(env, "SHOAL_LOAD_FAILURE_COOLDOWN_MS"),
    port: envInt(env, "SHOAL_LOADER_PORT"),
    host: envOptional(env, "SHOAL_HOST"),
    modelSources: { env },
    metrics: booted.metrics,
    logger: booted.logger,
    readiness: booted.readiness,
    tracer: booted.tracing.tracer,
  });
  booted.readiness.started();
  exitOnSignal(() => loader.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
