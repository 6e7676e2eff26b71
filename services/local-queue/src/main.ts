import { natsAuthFromEnv } from "@shoal/jetstream";
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
const booted = bootService("local-queue", env);
try {
  const queue = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    socketPath: envOptional(env, "SHOAL_LOCAL_QUEUE_SOCKET"),
    holdMs: envInt(env, "SHOAL_LOCAL_QUEUE_HOLD_MS"),
    maxItems: envInt(env, "SHOAL_LOCAL_QUEUE_MAX_ITEMS"),
    maxBytes: envInt(env, "SHOAL_LOCAL_QUEUE_MAX_BYTES"),
    progressIntervalMs: envInt(env, "SHOAL_LOCAL_QUEUE_PROGRESS_MS"),
    logger: booted.logger,
    readiness: booted.readiness,
  });
  booted.readiness.started();
  exitOnSignal(() => queue.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
