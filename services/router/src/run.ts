import { connectNats, drainOrClose, type NatsAuth, type ReadinessSink } from "@shoal/jetstream";
import {
  Autoscaler,
  ROUTING_POLICIES,
  Router,
  type AutoscalePolicyOptions,
  type RoutingPolicy,
} from "@shoal/router";
import type { Logger } from "@shoal/telemetry";
import { Counter, type Registry } from "prom-client";

export interface RouterServiceOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  readonly policy: RoutingPolicy;
  readonly refreshMs: number;
  /** Each worker's id and the model keys it serves (none when an autoscaler places them). */
  readonly workers: ReadonlyMap<string, readonly string[]>;
  /**
   * Resize each model's replica set on queue lag, loading and unloading models on the workers
   * of `node` (which run with that node id and load nothing until told).
   */
  readonly autoscale?:
    | {
        readonly node: string;
        /** Model keys and the memory each takes. */
        readonly models: ReadonlyMap<string, number>;
        readonly policy: AutoscalePolicyOptions;
        readonly syncMs: number;
        /** Arrival rates for `policy.fillMemory` are measured over this long, ms. */
        readonly demandWindowMs?: number;
      }
    | undefined;
  /** Where the autoscaler's counters are registered; none kept without. */
  readonly metrics?: Registry | undefined;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
}

export interface RunningRouter {
  readonly router: Router;
  readonly autoscaler?: Autoscaler;
  /** Stops taking work, then drains NATS. */
  stop(): Promise<void>;
}

/**
 * Parses `SHOAL_ROUTER_WORKERS`: `worker=key,key;worker=key`, each worker with the model keys
 * it serves.
 */
export function parseWorkers(spec: string): Map<string, string[]> {
  const workers = new Map<string, string[]>();
  for (const part of spec.split(";").filter((p) => p.trim() !== "")) {
    const [worker, models, ...rest] = part.split("=").map((s) => s.trim());
    const keys = (models ?? "").split(",").filter((k) => k !== "");
    if (worker === undefined || worker === "" || rest.length > 0 || keys.length === 0) {
      throw new Error(`SHOAL_ROUTER_WORKERS: "${part}" is not worker=key[,key...]`);
    }
    if (workers.has(worker)) throw new Error(`SHOAL_ROUTER_WORKERS: worker ${worker} twice`);
    workers.set(worker, keys);
  }
  return workers;
}

export function parsePolicy(value: string): RoutingPolicy {
  const policy = ROUTING_POLICIES.find((p) => p === value);
  if (policy === undefined) {
    throw new Error(
      `SHOAL_ROUTER_POLICY must be one of ${ROUTING_POLICIES.join(", ")}, got "${value}"`,
    );
  }
  return policy;
}

/**
 * The top-down router of the bench's router mode (libs/router): not part of a Shoal cluster,
 * whose workers pull; it exists to measure what pulling is compared with.
 */
export async function run(options: RouterServiceOptions): Promise<RunningRouter> {
  if (!(options.refreshMs >= 1)) throw new Error("the router's refresh interval must be ≥ 1 ms");
  const nc = await connectNats(
    options.natsServers,
    "shoal-router",
    options.natsAuth,
    options.readiness,
  );
  const router = await Router.start({
    nc,
    policy: options.policy,
    refreshMs: options.refreshMs,
    workers: options.workers,
    logger: options.logger,
  });
  const changes =
    options.metrics === undefined
      ? undefined
      : new Counter({
          name: "shoal_router_replica_changes_total",
          help: "Replicas the router's autoscaler loaded (change=load) and unloaded (change=unload).",
          labelNames: ["change"],
          registers: [options.metrics],
        });
  const autoscaler =
    options.autoscale === undefined
      ? undefined
      : await Autoscaler.start({
          nc,
          ...options.autoscale,
          membership: router,
          onChange: (change) => changes?.inc({ change }),
          logger: options.logger,
        });
  options.logger.info(
    {
      policy: options.policy,
      refresh_ms: options.refreshMs,
      workers: options.workers.size,
      autoscale: options.autoscale?.node,
    },
    "router routing",
  );
  return {
    router,
    ...(autoscaler === undefined ? {} : { autoscaler }),
    async stop() {
      await autoscaler?.stop();
      await router.stop();
      await drainOrClose(nc);
    },
  };
}
