import cluster, { type Worker } from "node:cluster";
import type { Logger, Tracing } from "@shoal/telemetry";

/**
 * What the supervisor sends a replica to have it shut down gracefully. A message rather than a
 * signal: a terminal's Ctrl-C already signals every process of the group, and a second signal
 * makes a service exit at once (`exitOnSignal`), while a repeated request to stop does not.
 */
export const SHUTDOWN_MESSAGE = "shoal:shutdown";

/** A replica that dies sooner than this after its start is restarted only after a pause. */
const CRASH_LOOP_MS = 5_000;
const RESTART_PAUSE_MS = 1_000;

/**
 * Runs `count` copies of this service's `main` in child processes that share its listening
 * port (`node:cluster`: the parent accepts each connection and hands it to a replica in turn),
 * so one service uses more than one core. Returns `"replica"` in a child, which then starts
 * the service as usual, and `"supervisor"` in the parent, which only watches: it restarts a
 * replica that dies, and on SIGINT or SIGTERM asks every replica to shut down
 * ({@link SHUTDOWN_MESSAGE}), waits for each to finish its own graceful shutdown and exits.
 *
 * Each replica is a whole service with its own connections: for ingress that means its own
 * NATS connection and reply subject, so answers reach the process that holds the client.
 */
export function superviseReplicas(
  count: number,
  booted: { readonly logger: Logger; readonly tracing: Tracing },
  graceMs = 20_000,
): "supervisor" | "replica" {
  if (!cluster.isPrimary) return "replica";
  const { logger } = booted;
  let stopping = false;
  const started = new Map<Worker, number>();
  /** Replicas serving the port: those not yet have no clients and nothing to drain. */
  const listening = new Set<Worker>();
  cluster.on("listening", (worker) => {
    listening.add(worker);
  });
  const fork = (): void => {
    // A restart still pausing when shutdown began is not made.
    if (!stopping) started.set(cluster.fork(), Date.now());
  };
  cluster.on("exit", (worker, code, signal) => {
    const since = Date.now() - (started.get(worker) ?? 0);
    started.delete(worker);
    listening.delete(worker);
    if (stopping) {
      if (started.size === 0) {
        void booted.tracing.shutdown().finally(() => process.exit(0));
      }
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, "replica died; starting another");
    if (since < CRASH_LOOP_MS) setTimeout(fork, RESTART_PAUSE_MS);
    else fork();
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal, replicas: started.size }, "shutting down replicas");
    setTimeout(() => process.exit(1), graceMs).unref();
    if (started.size === 0) process.exit(0);
    for (const worker of started.keys()) {
      if (listening.has(worker)) worker.send(SHUTDOWN_MESSAGE);
      else worker.process.kill("SIGTERM");
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  for (let i = 0; i < count; i++) fork();
  logger.info({ replicas: count }, "supervising replicas");
  return "supervisor";
}
