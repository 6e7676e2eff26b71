import { compileArrivals, type Arrivals } from "./arrivals.js";
import { compileDistribution, type Distribution } from "./distribution.js";
import { compileFleet, type FleetSpec } from "./fleet.js";
import { compilePopularity, type Popularity } from "./popularity.js";
import { cumulative } from "./random.js";
import { WorkloadError } from "./workload-error.js";
import { integer, number, object, type Obj } from "./validate.js";

/** What a request asks the cluster for. */
export type RequestFunction = "embed" | "generate";

/** One kind of request in the mix. */
export interface MixEntry {
  readonly function: RequestFunction;
  /** Weight of this entry among the mix's entries (its share of arrivals). */
  readonly share: number;
  /** Catalog ids; which one a request goes to follows `popularity`. */
  readonly models: readonly string[];
  /** Running sums of the models' popularity weights, for {@link Random.pick}. */
  readonly modelCumulative: readonly number[];
  /** The models' weights and how they drift over the sweep. */
  readonly popularity: Popularity;
  readonly arrivals: Arrivals;
  /** Tokens of each input (embed) or of the prompt (generate). */
  readonly inputTokens: Distribution;
  /** Inputs per request (embed); 1 for generate. */
  readonly inputs: Distribution;
  /** Tokens to generate (generate only). */
  readonly outputTokens?: Distribution;
  /** Generate only: stream the answer token by token. */
  readonly stream: boolean;
}

/** The offered load: open-loop Poisson arrivals at each rate in turn. */
export interface LoadSchedule {
  /** Requests per second of each step, ascending. */
  readonly rates: readonly number[];
  readonly stepSeconds: number;
  /** Unmeasured time at the start of every step, so queues reach their steady state. */
  readonly warmupSeconds: number;
}

/** A validated workload file. */
export interface Workload {
  readonly name: string;
  readonly seed: number;
  /** The latency objective the knee is found under. */
  readonly sloP99Ms: number;
  readonly load: LoadSchedule;
  readonly mix: readonly MixEntry[];
  readonly mixCumulative: readonly number[];
  /** The simulated fleet to run on (the fleet scenario only). */
  readonly fleet?: FleetSpec;
}

function rates(raw: Obj, where: string): number[] {
  if (raw["rates"] !== undefined && raw["ramp"] !== undefined) {
    throw new WorkloadError(`${where} must have one of rates, ramp, not both`);
  }
  if (Array.isArray(raw["rates"])) {
    const list = raw["rates"].map((r, i) => number(r, `${where}.rates[${i}]`, 0.01, 1e6));
    if (list.length === 0) throw new WorkloadError(`${where}.rates must not be empty`);
    for (let i = 1; i < list.length; i++) {
      if ((list[i] as number) <= (list[i - 1] as number)) {
        throw new WorkloadError(`${where}.rates must be ascending`);
      }
    }
    return list;
  }
  if (raw["ramp"] !== undefined) {
    const ramp = object(raw["ramp"], `${where}.ramp`, ["from", "to", "step"]);
    const from = number(ramp["from"], `${where}.ramp.from`, 0.01, 1e6);
    const to = number(ramp["to"], `${where}.ramp.to`, from, 1e6);
    const step = number(ramp["step"], `${where}.ramp.step`, 0.01, 1e6);
    if ((to - from) / step > 1000) throw new WorkloadError(`${where}.ramp has over 1000 steps`);
    const list: number[] = [];
    for (let r = from; r <= to + 1e-9; r += step) list.push(Math.round(r * 1000) / 1000);
    return list;
  }
  throw new WorkloadError(`${where} must have rates (a list) or ramp ({from, to, step})`);
}

/**
 * A mix entry's model ids: a list, or `{"prefix": "sim/m", "count": 64}` for `sim/m0` …
 * `sim/m63` (a long tail of models without writing each one).
 */
function modelIds(raw: unknown, where: string): string[] {
  if (Array.isArray(raw)) {
    if (raw.length === 0 || raw.some((m) => typeof m !== "string" || m === "")) {
      throw new WorkloadError(`${where} must be a non-empty list of model ids`);
    }
    if (new Set(raw).size !== raw.length) throw new WorkloadError(`${where} lists a model twice`);
    return raw as string[];
  }
  if (typeof raw === "object" && raw !== null) {
    const g = object(raw, where, ["prefix", "count"]);
    const prefix = g["prefix"];
    if (typeof prefix !== "string" || prefix === "") {
      throw new WorkloadError(`${where}.prefix must be a non-empty string`);
    }
    const count = integer(g["count"], `${where}.count`, 1, 4096);
    return Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  }
  throw new WorkloadError(
    `${where} must be a non-empty list of model ids or {"prefix": "…", "count": n}`,
  );
}

function mixEntry(raw: unknown, where: string, seed: number): MixEntry {
  const e = object(raw, where, [
    "function",
    "share",
    "models",
    "popularity",
    "arrivals",
    "input_tokens",
    "inputs",
    "output_tokens",
    "stream",
  ]);
  const fn = e["function"];
  if (fn !== "embed" && fn !== "generate") {
    throw new WorkloadError(
      `${where}.function must be embed or generate, got ${JSON.stringify(fn)}`,
    );
  }
  const models = modelIds(e["models"], `${where}.models`);
  const popularity = compilePopularity(e["popularity"], models.length, `${where}.popularity`, seed);
  if (fn === "embed" && (e["output_tokens"] !== undefined || e["stream"] !== undefined)) {
    throw new WorkloadError(`${where}: output_tokens and stream are for generate only`);
  }
  if (fn === "generate" && e["inputs"] !== undefined) {
    throw new WorkloadError(`${where}: inputs is for embed only (a generation has one prompt)`);
  }
  if (e["stream"] !== undefined && typeof e["stream"] !== "boolean") {
    throw new WorkloadError(`${where}.stream must be a boolean`);
  }
  return {
    function: fn,
    share: e["share"] === undefined ? 1 : number(e["share"], `${where}.share`, 1e-6, 1e6),
    models,
    modelCumulative: cumulative(popularity.weights),
    popularity,
    arrivals: compileArrivals(e["arrivals"], `${where}.arrivals`),
    inputTokens: compileDistribution(e["input_tokens"] ?? 16, `${where}.input_tokens`),
    inputs: compileDistribution(e["inputs"] ?? 1, `${where}.inputs`),
    ...(fn === "generate"
      ? { outputTokens: compileDistribution(e["output_tokens"] ?? 16, `${where}.output_tokens`) }
      : {}),
    stream: e["stream"] === true,
  };
}

/**
 * Validates a parsed workload file (libs/loadgen/README.md describes the format). Closed at every level:
 * a misspelt key is an error rather than a silently different benchmark.
 */
export function compileWorkload(raw: unknown): Workload {
  const w = object(raw, "workload", ["name", "seed", "slo", "load", "mix", "fleet"]);
  const name = w["name"];
  if (typeof name !== "string" || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) {
    throw new WorkloadError("workload.name must match [a-z0-9][a-z0-9-]{0,62}");
  }
  const seed = w["seed"] === undefined ? 1 : w["seed"];
  if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new WorkloadError("workload.seed must be an integer in 0..=4294967295");
  }
  const slo = object(w["slo"], "workload.slo", ["p99_ms"]);
  const load = object(w["load"], "workload.load", [
    "rates",
    "ramp",
    "step_seconds",
    "warmup_seconds",
  ]);
  const mixRaw = w["mix"];
  if (!Array.isArray(mixRaw) || mixRaw.length === 0) {
    throw new WorkloadError("workload.mix must be a non-empty list");
  }
  const mix = mixRaw.map((m, i) => mixEntry(m, `workload.mix[${i}]`, (seed + i) >>> 0));
  return {
    name,
    seed,
    sloP99Ms: number(slo["p99_ms"], "workload.slo.p99_ms", 1, 3_600_000),
    load: {
      rates: rates(load, "workload.load"),
      stepSeconds: number(load["step_seconds"] ?? 10, "workload.load.step_seconds", 0.1, 3600),
      warmupSeconds: number(load["warmup_seconds"] ?? 0, "workload.load.warmup_seconds", 0, 3600),
    },
    mix,
    mixCumulative: cumulative(mix.map((m) => m.share)),
    ...(w["fleet"] === undefined ? {} : { fleet: compileFleet(w["fleet"], "workload.fleet") }),
  };
}
