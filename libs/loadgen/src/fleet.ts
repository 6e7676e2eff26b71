import { integer, number, object } from "./validate.js";
import { WorkloadError } from "./workload-error.js";

/** Accelerators of one kind: how many, how fast against the cost model, how much memory. */
export interface AcceleratorClass {
  readonly count: number;
  /** Throughput against the reference accelerator the cost model describes: 0.5 is half as fast. */
  readonly speed: number;
  readonly memoryBytes: number;
}

/**
 * The simulated fleet a workload runs on (the bench's `fleet` scenario): its accelerators,
 * how many models each holds at once, what a batch costs and how much memory a model takes.
 * Every field is optional; the bench fills what is left out with its defaults.
 */
export interface FleetSpec {
  readonly accelerators?: readonly AcceleratorClass[];
  /**
   * Copies of models each accelerator holds at once (static residency): 1 is one model per
   * accelerator, as per-model replica sets deploy; more is models sharing accelerators.
   */
  readonly modelsPerAccelerator: number;
  /** Cost of a batch on a speed-1 accelerator (the simulated backend's cost model). */
  readonly batchCost?: { readonly fixedUs: number; readonly perPaddedTokenNs: number };
  /** Memory each model takes on an accelerator. */
  readonly modelMemoryBytes?: number;
  /**
   * `static`: each accelerator holds the same models for the whole run, placed by popularity at
   * the start. `dynamic`: models are loaded and evicted as demand moves, within each
   * accelerator's memory (pull mode: the model-loader; router mode: a replica autoscaler).
   */
  readonly residency: "static" | "dynamic";
  /** How long loading a model onto an accelerator takes, ms. */
  readonly modelLoadMs?: number;
}

const GB = 1e9;

/** The most accelerators a fleet may have: one worker process and sidecar each. */
export const MAX_ACCELERATORS = 256;

export function compileFleet(raw: unknown, where: string): FleetSpec {
  const f = object(raw, where, [
    "accelerators",
    "models_per_accelerator",
    "batch_cost",
    "model_memory_gb",
    "residency",
    "model_load_ms",
  ]);
  const residency = f["residency"] ?? "static";
  if (residency !== "static" && residency !== "dynamic") {
    throw new WorkloadError(
      `${where}.residency must be static or dynamic, got ${JSON.stringify(residency)}`,
    );
  }
  let accelerators: AcceleratorClass[] | undefined;
  if (f["accelerators"] !== undefined) {
    const list = f["accelerators"];
    if (!Array.isArray(list) || list.length === 0) {
      throw new WorkloadError(`${where}.accelerators must be a non-empty list`);
    }
    accelerators = list.map((c, i) => {
      const at = `${where}.accelerators[${i}]`;
      const a = object(c, at, ["count", "speed", "memory_gb"]);
      return {
        count: integer(a["count"], `${at}.count`, 1, MAX_ACCELERATORS),
        speed: a["speed"] === undefined ? 1 : number(a["speed"], `${at}.speed`, 0.05, 20),
        memoryBytes: number(a["memory_gb"] ?? 80, `${at}.memory_gb`, 0.001, 1024) * GB,
      };
    });
    const total = accelerators.reduce((n, c) => n + c.count, 0);
    if (total > MAX_ACCELERATORS) {
      throw new WorkloadError(
        `${where}.accelerators: ${total} in all, at most ${MAX_ACCELERATORS}`,
      );
    }
  }
  let batchCost: FleetSpec["batchCost"];
  if (f["batch_cost"] !== undefined) {
    const c = object(f["batch_cost"], `${where}.batch_cost`, ["fixed_us", "per_padded_token_ns"]);
    batchCost = {
      fixedUs: number(c["fixed_us"], `${where}.batch_cost.fixed_us`, 0, 60_000_000),
      perPaddedTokenNs: number(
        c["per_padded_token_ns"],
        `${where}.batch_cost.per_padded_token_ns`,
        0,
        1e9,
      ),
    };
  }
  return {
    ...(accelerators === undefined ? {} : { accelerators }),
    modelsPerAccelerator:
      f["models_per_accelerator"] === undefined
        ? 1
        : integer(f["models_per_accelerator"], `${where}.models_per_accelerator`, 1, 64),
    ...(batchCost === undefined ? {} : { batchCost }),
    residency,
    ...(f["model_load_ms"] === undefined
      ? {}
      : { modelLoadMs: number(f["model_load_ms"], `${where}.model_load_ms`, 0, 600_000) }),
    ...(f["model_memory_gb"] === undefined
      ? {}
      : {
          modelMemoryBytes:
            number(f["model_memory_gb"], `${where}.model_memory_gb`, 0.001, 1024) * GB,
        }),
  };
}
