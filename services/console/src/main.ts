import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envList,
  envOptional,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { run } from "./run.js";

const env = process.env;
const booted = bootService("console", env);
try {
  const tracesUrl = envOptional(env, "SHOAL_CONSOLE_TRACES_URL");
  const console = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    catalog: await catalogFromEnv(env),
    port: envInt(env, "SHOAL_CONSOLE_PORT") ?? 8093,
    host: envOptional(env, "SHOAL_CONSOLE_HOST") ?? envOptional(env, "SHOAL_HOST"),
    ingressMetrics: envList(env, "SHOAL_CONSOLE_INGRESS_METRICS") ?? [],
    traces:
      tracesUrl === undefined
        ? undefined
        : { queryUrl: tracesUrl, uiUrl: envOptional(env, "SHOAL_CONSOLE_TRACES_UI_URL") },
    benchmarkDirs: envList(env, "SHOAL_CONSOLE_BENCH_DIRS") ?? [],
    windowMs: envInt(env, "SHOAL_CONSOLE_WINDOW_MS"),
    maxPages: envInt(env, "SHOAL_CONSOLE_MAX_PAGES"),
    logger: booted.logger,
    readiness: booted.readiness,
  });
  booted.readiness.started();
  exitOnSignal(() => console.stop(), booted);
} catch (err) {
  failStart(booted, err);
}
