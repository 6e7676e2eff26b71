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

/** Logger and tracing for a service's `main`, from the standard variables. */
export function bootService(service: string, env: Env): Booted {
  if (cluster.isWorker) {
    process.on("message", (message) => {
      if (message === SHUTDOWN_MESSAGE) askStop();
    });
    // A replica whose supervisor is gone would otherwise serve on, unmanaged.
    process.once("disconnect", askStop);
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
