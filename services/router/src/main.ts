import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  envInt,
  envRequired,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { parsePolicy, parseWorkers, run } from "./run.js";

const env = process.env;
const booted = bootService("router", env);
try {
  const router = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    policy: parsePolicy(envString(env, "SHOAL_ROUTER_POLICY", "least-outstanding")),
    refreshMs: envInt(env, "SHOAL_ROUTER_REFRESH_MS") ?? 10,
    workers: parseWorkers(envRequired(env, "SHOAL_ROUTER_WORKERS")),
    logger: booted.logger,
    readiness: booted.readiness,
  });
  booted.readiness.started();
  exitOnSignal(() => router.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
