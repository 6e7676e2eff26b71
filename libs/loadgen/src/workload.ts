import { compileDistribution, type Distribution } from "./distribution.js";
import { cumulative, zipfWeights } from "./random.js";
import { WorkloadError } from "./workload-error.js";

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
}

type Obj = Record<string, unknown>;

function object(raw: unknown, where: string, keys: readonly string[]): Obj {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new WorkloadError(`${where} must be an object`);
  }
  const unknown = Object.keys(raw).filter((k) => !keys.includes(k));
  if (unknown.length > 0) throw new WorkloadError(`${where}: unknown key ${unknown[0]}`);
  return raw as Obj;
}

function number(raw: unknown, where: string, min: number, max: number): number {
  if (typeof raw !== "number" || !Number.isFinite(raw) || raw < min || raw > max) {
    throw new WorkloadError(
      `${where} must be a number in ${min}..=${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
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

function mixEntry(raw: unknown, where: string): MixEntry {
  const e = object(raw, where, [
    "function",
    "share",
    "models",
    "popularity",
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
  const models = e["models"];
  if (
    !Array.isArray(models) ||
    models.length === 0 ||
    models.some((m) => typeof m !== "string" || m === "")
  ) {
    throw new WorkloadError(`${where}.models must be a non-empty list of model ids`);
  }
  let weights = models.map(() => 1);
  if (e["popularity"] !== undefined) {
    const p = object(e["popularity"], `${where}.popularity`, ["zipf"]);
    weights = zipfWeights(models.length, number(p["zipf"], `${where}.popularity.zipf`, 0, 10));
  }
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
    models: models as string[],
    modelCumulative: cumulative(weights),
    inputTokens: compileDistribution(e["input_tokens"] ?? 16, `${where}.input_tokens`),
    inputs: compileDistribution(e["inputs"] ?? 1, `${where}.inputs`),
    ...(fn === "generate"
      ? { outputTokens: compileDistribution(e["output_tokens"] ?? 16, `${where}.output_tokens`) }
      : {}),
    stream: e["stream"] === true,
  };
}

/**
 * Validates a parsed workload file (docs/bench.md describes the format). Closed at every level:
 * a misspelt key is an error rather than a silently different benchmark.
 */
export function compileWorkload(raw: unknown): Workload {
  const w = object(raw, "workload", ["name", "seed", "slo", "load", "mix"]);
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
  const mix = mixRaw.map((m, i) => mixEntry(m, `workload.mix[${i}]`));
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
  };
}
