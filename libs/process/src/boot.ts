import cluster from "node:cluster";
import type { LevelWithSilent } from "pino";
import { createLogger, startTracing, type Logger, type Tracing } from "@shoal/telemetry";
import type { Env } from "./env.js";
import { SHUTDOWN_MESSAGE } from "./replicas.js";

export interface Booted {
  readonly logger: Logger;
  readonly tracing: Tracing;
}

/**
 * Set when a replica's supervisor asked it to stop (or went away) before `exitOnSignal` was
 * called, i.e. while the service was still starting: the request is kept, not dropped.
 */
let stopAskedWhileStarting = false;

/** Logger and tracing for a service's `main`, from the standard variables. */
export function bootService(service: string, env: Env): Booted {
  if (cluster.isWorker) {
    const early = (message?: unknown): void => {
      if (message === undefined || message === SHUTDOWN_MESSAGE) stopAskedWhileStarting = true;
    };
    process.on("message", early);
    process.once("disconnect", () => {
      early();
    });
  }
  const tracing = startTracing({ serviceName: `shoal-${service}`, env });
  const logger = createLogger({
    service,
    level: (env["LOG_LEVEL"] ?? "info") as LevelWithSilent,
  });
  return { logger, tracing };
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
    booted.logger.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop()
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
  // A replica's supervisor asks by message; asking twice, or after a Ctrl-C that reached the
  // replica too, is not a second signal.
  process.on("message", (message) => {
    if (message === SHUTDOWN_MESSAGE && !stopping) onSignal("SIGTERM");
  });
  // A replica whose supervisor is gone would otherwise serve on, unmanaged.
  if (cluster.isWorker) {
    process.on("disconnect", () => {
      if (!stopping) onSignal("SIGTERM");
    });
    if (stopAskedWhileStarting || !process.connected) onSignal("SIGTERM");
  }
}

/** Ends a `main` that failed to start: log the cause, exit non-zero. */
export function failStart(booted: Booted, err: unknown): never {
  booted.logger.fatal({ err }, "failed to start");
  process.exit(1);
}
