/**
 * The fairness bench: does one tenant's flood cost another tenant anything? One cluster with
 * API keys, two tenants sending single-input embeddings through the open-loop generator:
 *
 *   1. alone: the steady tenant B at `steadyRps`, nobody else;
 *   2. quota: B as before while tenant A, limited to `quotaRps`, offers `floodFactor` times it;
 *   3. no quota (`compareUnlimited`): the same flood from a tenant without limits, to show
 *      what the quota prevents.
 *
 * B's latency percentiles in each phase, and what A got (answered, 429s, `Retry-After`), go to
 * the result. The model is simulated with a wall-time cost per batch, so the numbers measure
 * Shoal's admission and queue, not a model.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import { TenantStore } from "@shoal/tenants";
import { encodeBodies, ROUTES } from "../overhead/bodies.js";
import { OVERHEAD_MODEL, startOverheadCluster, type OverheadCluster } from "../overhead/cluster.js";
import { openloop, type GeneratorStep } from "../overhead/openloop.js";

export interface FairnessOptions {
  /** Where the bodies and `result.json` go. */
  readonly out: string;
  readonly steadyRps: number;
  /** Tenant A's limit, requests/s. */
  readonly quotaRps: number;
  /** A offers this many times its quota. */
  readonly floodFactor: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Also run the flood from a tenant without limits. */
  readonly compareUnlimited: boolean;
}

export const FAIRNESS_DEFAULTS = {
  steadyRps: 50,
  quotaRps: 40,
  floodFactor: 10,
  seconds: 15,
  warmupSeconds: 3,
  compareUnlimited: true,
} as const;

/**
 * A simulated batch: 3 ms, plus 2.5 ms per input, so the model serves about 400 inputs a
 * second: well above what the quota lets in beside the steady load, below the unlimited flood.
 */
const COST = { fixedUs: 3000, perSequenceUs: 2500 };

export interface FairnessPhase {
  readonly steady: GeneratorStep;
  readonly flood?: GeneratorStep;
}

export interface FairnessResult {
  readonly scenario: "fairness";
  readonly options: Omit<FairnessOptions, "out">;
  readonly alone: FairnessPhase;
  readonly quota: FairnessPhase;
  readonly unlimited?: FairnessPhase;
  /** B's p99 with A flooding under its quota, over B's p99 alone. */
  readonly steady_p99_ratio: number;
  /** The same without a quota, when measured. */
  readonly steady_p99_ratio_unlimited?: number;
}

export async function benchFairness(options: FairnessOptions): Promise<FairnessResult> {
  const cluster = await startOverheadCluster({ serviceEnv: { SHOAL_AUTH: "keys" }, cost: COST });
  try {
    const keys = await makeTenants(cluster, options.quotaRps);
    const bodies = join(options.out, "fairness.bodies");
    await writeFile(bodies, encodeBodies("rest", OVERHEAD_MODEL, 1000, 10));
    const step = (key: string, rate: number, seed: number) =>
      openloop([
        "-protocol=http",
        `-url=${cluster.baseUrl}`,
        `-path=${ROUTES.rest.path}`,
        `-content-type=${ROUTES.rest.contentType}`,
        `-conns=${ROUTES.rest.conns}`,
        `-bodies=${bodies}`,
        `-rate=${rate}`,
        `-seconds=${options.seconds}`,
        `-warmup=${options.warmupSeconds}`,
        `-seed=${seed}`,
        "-timeout=10s",
        `-header=authorization: Bearer ${key}`,
      ]);
    const flood = options.quotaRps * options.floodFactor;
    const phase = async (floodKey: string | undefined): Promise<FairnessPhase> => {
      const [steady, flooded] = await Promise.all([
        step(keys.steady, options.steadyRps, 1),
        floodKey === undefined ? undefined : step(floodKey, flood, 2),
      ]);
      // Whatever the flood left queued drains before the next phase.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      return flooded === undefined ? { steady } : { steady, flood: flooded };
    };
    // Connections, the model's first load and the JIT warm up first, unmeasured.
    await step(keys.steady, options.steadyRps, 3);
    const alone = await phase(undefined);
    const quota = await phase(keys.limited);
    const unlimited = options.compareUnlimited ? await phase(keys.unlimited) : undefined;
    const settings = {
      steadyRps: options.steadyRps,
      quotaRps: options.quotaRps,
      floodFactor: options.floodFactor,
      seconds: options.seconds,
      warmupSeconds: options.warmupSeconds,
      compareUnlimited: options.compareUnlimited,
    };
    const ratio = (p: FairnessPhase) => p.steady.latency_ms.p99 / alone.steady.latency_ms.p99;
    const result: FairnessResult = {
      scenario: "fairness",
      options: settings,
      alone,
      quota,
      steady_p99_ratio: ratio(quota),
      ...(unlimited === undefined
        ? {}
        : { unlimited, steady_p99_ratio_unlimited: ratio(unlimited) }),
    };
    await writeFile(join(options.out, "result.json"), JSON.stringify(result, null, 2) + "\n");
    return result;
  } finally {
    await cluster.stop();
  }
}

/** B without limits, A limited to `quotaRps`, and an unlimited flooder for comparison. */
async function makeTenants(
  cluster: OverheadCluster,
  quotaRps: number,
): Promise<{ steady: string; limited: string; unlimited: string }> {
  const nc = await connect({ servers: cluster.natsUrl });
  const store = await TenantStore.open(nc, createLogger({ service: "bench", level: "warn" }));
  try {
    await store.createTenant("steady");
    await store.createTenant("limited", undefined, { requestsPerSecond: quotaRps });
    await store.createTenant("unlimited");
    const key = async (tenant: string) => (await store.createKey(tenant, "fairness bench")).key;
    return {
      steady: await key("steady"),
      limited: await key("limited"),
      unlimited: await key("unlimited"),
    };
  } finally {
    store.stop();
    await nc.close();
  }
}
