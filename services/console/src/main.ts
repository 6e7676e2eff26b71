import { ConfigError } from "@shoal/config";
import { natsAuthFromEnv } from "@shoal/jetstream";
import {
  bootService,
  catalogFromEnv,
  envInt,
  envList,
  envPercent,
  envOptional,
  envString,
  exitOnSignal,
  failStart,
} from "@shoal/process";
import { isLoopback } from "@shoal/tenants";
import { run } from "./run.js";

const env = process.env;
const booted = bootService("console", env);
try {
  const tracesUrl = envOptional(env, "SHOAL_CONSOLE_TRACES_URL");
  const host =
    envOptional(env, "SHOAL_CONSOLE_HOST") ?? envOptional(env, "SHOAL_HOST") ?? "127.0.0.1";
  // The console has no login of its own: what it shows (models, tenants' adapter names, queue
  // depths) stays on this machine unless the operator says otherwise, e.g. behind a proxy
  // that authenticates.
  if (!isLoopback(host) && env["SHOAL_CONSOLE_OPEN"] !== "1") {
    throw new ConfigError(
      `the console would show the fleet to anyone reaching ${host}: it has no login, so serve it ` +
        "on loopback (reach it through SSH or kubectl port-forward, or an authenticating proxy), " +
        "or set SHOAL_CONSOLE_OPEN=1 to serve that network",
    );
  }
  const console = await run({
    natsServers: envString(env, "NATS_URL", "nats://127.0.0.1:4222"),
    natsAuth: natsAuthFromEnv(env),
    catalog: await catalogFromEnv(env),
    port: envInt(env, "SHOAL_CONSOLE_PORT") ?? 8093,
    host,
    ingressMetrics: envList(env, "SHOAL_CONSOLE_INGRESS_METRICS") ?? [],
    loaders: envList(env, "SHOAL_CONSOLE_LOADERS") ?? [],
    traces:
      tracesUrl === undefined
        ? undefined
        : { queryUrl: tracesUrl, uiUrl: envOptional(env, "SHOAL_CONSOLE_TRACES_UI_URL") },
    headroom: {
      bytes: envInt(env, "SHOAL_HEADROOM_BYTES"),
      fraction: envPercent(env, "SHOAL_HEADROOM_PERCENT"),
    },
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
