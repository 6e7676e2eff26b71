/**
 * The fleet scenario's comparison: pull mode on the workload's simulated fleet, then, with
 * `compare`, the same workers behind the top-down router for every policy and view refresh
 * interval (once for the policies that never read the view). Reports every mode's sweep,
 * `pull_over_router` against the best router configuration, and how that best one did against
 * the naive random router, so a reader can see the baseline is a strong one.
 */
import type { ConfigBundle } from "@shoal/config";
import { planStep, runStep, type Send, type Workload } from "@shoal/loadgen";
import { VIEW_BLIND_POLICIES, type RoutingPolicy } from "@shoal/router";
import type { FleetHarness, RouterAutoscale } from "./harness/sim-fleet.js";
import { fleetSetup, startScenario, warm, type FleetSetup } from "./scenarios.js";
import { sweep, type ModeResult } from "./sweep.js";
import { sender, type Target } from "./targets/index.js";

export interface FleetCompareOptions {
  readonly workload: Workload;
  readonly rates: readonly number[];
  /** The bundle file the services run with (`none` for the defaults). */
  readonly bundle: string | undefined;
  readonly loadedBundle: ConfigBundle | undefined;
  /** Accelerators for a workload that does not list its own. */
  readonly accelerators: number | undefined;
  readonly compare: boolean;
  readonly policies: readonly RoutingPolicy[];
  readonly refreshes: readonly number[];
  readonly target: Target;
  /** The router baseline's replica autoscaler, for workloads with dynamic residency. */
  readonly autoscale?: RouterAutoscale | undefined;
  /**
   * With dynamic residency, which autoscalers each router configuration runs with: on lag
   * alone (`lag`, the conventional deployment) and sharing free memory by demand (`fill`).
   */
  readonly autoscalers: readonly RouterResidency[];
  /** Told of each cluster as it starts, so Ctrl-C can stop it. */
  readonly running: (harness: FleetHarness) => void;
}

export type RouterResidency = "lag" | "fill";

export interface FleetOutcome {
  readonly modes: Record<string, ModeResult>;
  readonly extra: Record<string, unknown>;
}

/** How long a fleet with dynamic residency runs at the first rate, unmeasured, before a sweep. */
const SETTLE_SECONDS = 20;

/**
 * With dynamic residency, the first step's load, unmeasured, so each mode has placed what that
 * load needs before anything is measured (warm-up gives each model one copy at most).
 */
async function settle(
  send: Send,
  workload: Workload,
  rates: readonly number[],
  setup: FleetSetup,
): Promise<void> {
  const rate = rates[0];
  if (setup.dynamic === undefined || rate === undefined) return;
  await runStep({
    offeredRps: rate,
    plan: planStep(workload, 0, rate, SETTLE_SECONDS),
    seconds: SETTLE_SECONDS,
    warmupSeconds: SETTLE_SECONDS,
    drainMs: 10_000,
    send,
  });
}

export async function compareFleet(o: FleetCompareOptions): Promise<FleetOutcome> {
  const setup = fleetSetup(o.workload, o.accelerators, o.loadedBundle, o.autoscale);
  const modes: Record<string, ModeResult> = {};
  let extra: Record<string, unknown> = {
    accelerators: setup.accelerators.length,
    placement: setup.accelerators.map((a) => ({
      id: a.id,
      speed: a.speed,
      memory_bytes: a.memoryBytes,
      models: a.models,
    })),
    cost: setup.cost,
    residency:
      setup.dynamic === undefined
        ? "static"
        : {
            dynamic: true,
            load_ms: setup.dynamic.loadMs,
            router_autoscale: setup.dynamic.autoscale,
          },
  };
  const options = {
    bundle: o.bundle,
    accelerators: o.accelerators,
    ...(o.autoscale === undefined ? {} : { autoscale: o.autoscale }),
  };
  const pull = await startScenario("fleet", o.workload, options);
  o.running(pull);
  try {
    const send = sender(o.target, pull.baseUrls);
    await warm(send, o.workload);
    await settle(send, o.workload, o.rates, setup);
    modes["pull"] = await sweep("pull", pull, o.workload, o.rates, send);
  } finally {
    await pull.stop();
  }
  if (!o.compare) return { modes, extra };

  const routed = await startScenario("fleet", o.workload, { ...options, routed: true });
  o.running(routed);
  try {
    const send = sender(o.target, routed.baseUrls);
    const residencies = setup.dynamic === undefined ? (["lag"] as const) : o.autoscalers;
    for (const policy of o.policies) {
      const blind = VIEW_BLIND_POLICIES.includes(policy);
      for (const refreshMs of blind ? o.refreshes.slice(0, 1) : o.refreshes) {
        for (const residency of residencies) {
          await routed.routeWith(policy, refreshMs, residency === "fill");
          await warm(send, o.workload);
          await settle(send, o.workload, o.rates, setup);
          const label =
            (blind ? `router/${policy}` : `router/${policy}/${refreshMs}ms`) +
            (residency === "fill" ? "/fill" : "");
          modes[label] = await sweep(label, routed, o.workload, o.rates, send);
        }
      }
    }
  } finally {
    await routed.stop();
  }
  const routers = Object.entries(modes)
    .filter(([name]) => name !== "pull")
    .sort((a, b) => b[1].knee_rps - a[1].knee_rps);
  const best = routers[0];
  if (best !== undefined) {
    extra = {
      ...extra,
      best_router: best[0],
      pull_over_router: modes["pull"].knee_rps / best[1].knee_rps,
    };
    // Random with the conventional autoscaler when it ran, else with the one that did.
    const naiveLabel = ["router/random", "router/random/fill"].find((l) => l in modes);
    const naive = naiveLabel === undefined ? undefined : modes[naiveLabel];
    if (naive !== undefined) {
      extra = {
        ...extra,
        naive_router: naiveLabel,
        best_router_over_naive: naive.knee_rps > 0 ? best[1].knee_rps / naive.knee_rps : null,
      };
    }
  }
  return { modes, extra };
}

/** One scenario's line in suite.json: its knees and ratios, the details in its result.json. */
export function suiteLine(result: Record<string, unknown>): Record<string, unknown> {
  const modesOf = result["modes"] as Record<string, Record<string, unknown>>;
  const best =
    typeof result["best_router"] === "string" ? modesOf[result["best_router"]] : undefined;
  return {
    workload: result["workload"],
    pull_knee_rps: result["knee_rps"],
    pull_utilization_at_knee: result["utilization_at_knee"],
    pull_utilization_distribution_at_knee: result["utilization_distribution_at_knee"],
    best_router: result["best_router"] ?? null,
    best_router_knee_rps: best?.["knee_rps"] ?? null,
    pull_over_router: result["pull_over_router"] ?? null,
    best_router_over_naive: result["best_router_over_naive"] ?? null,
  };
}
