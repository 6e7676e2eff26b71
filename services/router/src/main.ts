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
import { ConfigError } from "@shoal/config";
import { parsePolicy, parseWorkers, run, type RouterServiceOptions } from "./run.js";

const env = process.env;

/** Replica autoscaling, when `SHOAL_ROUTER_AUTOSCALE_NODE` names the workers' node. */
async function autoscaleFromEnv(): Promise<RouterServiceOptions["autoscale"]> {
  const node = envOptional(env, "SHOAL_ROUTER_AUTOSCALE_NODE");
  if (node === undefined) return undefined;
  const catalog = await catalogFromEnv(env);
  const target = envInt(env, "SHOAL_ROUTER_TARGET_LAG") ?? 8;
  const windowMs = envInt(env, "SHOAL_ROUTER_SCALE_DOWN_WINDOW_MS") ?? 300_000;
  const syncMs = envInt(env, "SHOAL_ROUTER_SYNC_MS") ?? 15_000;
  const demandWindowMs = envInt(env, "SHOAL_ROUTER_DEMAND_WINDOW_MS") ?? 60_000;
  const fill = envString(env, "SHOAL_ROUTER_FILL_MEMORY", "0");
  if (!(target >= 1) || !(windowMs >= 0) || !(syncMs >= 100) || !(demandWindowMs >= syncMs)) {
    throw new ConfigError(
      "SHOAL_ROUTER_TARGET_LAG must be ≥ 1, SHOAL_ROUTER_SCALE_DOWN_WINDOW_MS ≥ 0, " +
        "SHOAL_ROUTER_SYNC_MS ≥ 100, SHOAL_ROUTER_DEMAND_WINDOW_MS ≥ SHOAL_ROUTER_SYNC_MS",
    );
  }
  if (fill !== "0" && fill !== "1") {
    throw new ConfigError(`SHOAL_ROUTER_FILL_MEMORY must be 0 or 1, got "${fill}"`);
  }
  return {
    node,
    models: new Map(
      catalog.models.map((m) => [m.key, m.memoryBytes ?? m.sim?.memoryBytes ?? 512 * 1024 ** 2]),
    ),
    policy: {
      targetLagPerReplica: target,
      minReplicas: envInt(env, "SHOAL_ROUTER_MIN_REPLICAS") ?? 1,
      scaleDownWindowMs: windowMs,
      fillMemory: fill === "1",
    },
    syncMs,
    demandWindowMs,
  };
}

const booted = bootService("router", env);
try {
  const autoscale = await autoscaleFromEnv();
  const workers = parseWorkers(envString(env, "SHOAL_ROUTER_WORKERS", ""));
  if (workers.size === 0 && autoscale === undefined) {
    throw new ConfigError("SHOAL_ROUTER_WORKERS names no worker and no autoscaler places models");
  }
  const router = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    policy: parsePolicy(envString(env, "SHOAL_ROUTER_POLICY", "least-outstanding")),
    refreshMs: envInt(env, "SHOAL_ROUTER_REFRESH_MS") ?? 10,
    workers,
    autoscale,
    metrics: booted.metrics,
    logger: booted.logger,
    readiness: booted.readiness,
  });
  booted.readiness.started();
  exitOnSignal(() => router.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
