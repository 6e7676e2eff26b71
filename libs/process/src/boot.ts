import cluster from "node:cluster";
import type { LevelWithSilent } from "pino";
import type { Registry } from "prom-client";
import {
  createLogger,
  createMetricsRegistry,
  Readiness,
  reportToSupervisor,
  serveMetrics,
  supervisedMetrics,
  startTracing,
  type Logger,
  type MetricsServer,
  type Tracing,
} from "@shoal/telemetry";
import { envInt, envOptional, type Env } from "./env.js";
import { SHUTDOWN_MESSAGE } from "./replicas.js";

export interface Booted {
  readonly logger: Logger;
  readonly tracing: Tracing;
  /**
   * Where the service registers its metrics, when they are served (`SHOAL_METRICS_PORT` set):
   * a process nobody scrapes does not pay for keeping them.
   */
  readonly metrics: Registry | undefined;
  /** The `/metrics`, `/healthz` and `/readyz` server, when `SHOAL_METRICS_PORT` is set. */
  readonly metricsServer: Promise<MetricsServer> | undefined;
  /**
   * What `/readyz` reports: "starting" until the service calls `started()`, "stopping" once a
   * signal arrives, and whatever its parts set meanwhile (its NATS connection, its sidecar).
   */
  readonly readiness: Readiness;
}

/**
 * A replica's supervisor asks it to stop by message, or goes away. Either may happen while
 * the service is still starting, before `exitOnSignal` says how to stop: the request is kept
 * until then rather than dropped.
 */
let stopAsked = false;
let onStopAsked: (() => void) | undefined;

function askStop(): void {
  stopAsked = true;
  onStopAsked?.();
}

/**
 * Logger, tracing and metrics for a service's `main`, from the standard variables; metrics are
 * served on `SHOAL_METRICS_PORT` (on `SHOAL_METRICS_HOST`, default 127.0.0.1) when it is set.
 * A port that cannot be bound fails the start.
 */
export function bootService(service: string, env: Env): Booted {
  if (cluster.isWorker) {
    process.on("message", (message) => {
      if (message === SHUTDOWN_MESSAGE) askStop();
    });
    // A replica whose supervisor is gone would otherwise serve on, unmanaged.
    process.once("disconnect", askStop);
  }
  const logger = createLogger({
    service,
    level: (env["LOG_LEVEL"] ?? "info") as LevelWithSilent,
  });
  const port = envInt(env, "SHOAL_METRICS_PORT");
  const metrics = port === undefined ? undefined : createMetricsRegistry();
  const readiness = new Readiness();
  const tracing = startTracing({ serviceName: `shoal-${service}`, env, logger, metrics });
  // Replicas of one service cannot all claim the port: each keeps its metrics, and their
  // supervisor serves the sum.
  if (metrics !== undefined && cluster.isWorker) reportToSupervisor(metrics);
  const metricsServer =
    port === undefined || metrics === undefined || cluster.isWorker
      ? undefined
      : serveMetrics({
          registry: supervisedMetrics(metrics),
          port,
          host: envOptional(env, "SHOAL_METRICS_HOST"),
          logger,
          readiness,
        });
  metricsServer?.catch((err: unknown) => {
    logger.fatal({ err, port }, "metrics port unavailable");
    process.exit(1);
  });
  return { logger, tracing, metrics, metricsServer, readiness };
}

/**
 * Runs `stop` on the first SIGINT or SIGTERM, then flushes tracing and exits; a second
 * signal, or `graceMs` passing, exits at once.
 */
export function exitOnSignal(stop: () => Promise<void>, booted: Booted, graceMs = 15_000): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    booted.readiness.set("stop", "stopping");
    booted.logger.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop()
      .then(() => booted.metricsServer?.then((server) => server.close()))
      .then(() => booted.tracing.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          booted.logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  // Asking twice, or after a Ctrl-C that reached the replica too, is not a second signal.
  onStopAsked = () => {
    if (!stopping) onSignal("SIGTERM");
  };
  if (stopAsked) onStopAsked();
}

/** Ends a `main` that failed to start: log the cause, exit non-zero. */
export function failStart(booted: Booted, err: unknown): never {
  booted.logger.fatal({ err }, "failed to start");
  process.exit(1);
}
