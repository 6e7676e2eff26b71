import { Random, zipfWeights } from "./random.js";
import { WorkloadError } from "./workload-error.js";
import { number, object } from "./validate.js";

/**
 * How a mix entry's models share its requests, and how that moves over time. Production
 * popularity is skewed (a few models take most requests: Shahrad et al., "Serverless in the
 * Wild", USENIX ATC 2020, found the most popular 18.6 % of Azure Functions apps take 99.6 % of
 * invocations) and does not stay put: what was cold becomes hot. A placement sized for the
 * popularity of one moment is wrong a little later, which is what drift tests.
 */
export interface Popularity {
  /** Weight of each rank, most popular first (Zipf, or equal). */
  readonly weights: readonly number[];
  readonly drift?: Drift;
}

/**
 * Every `everySeconds` of the sweep's clock, which model holds which rank changes:
 * - `rotate`: every rank moves `by` models along (the hot spot walks through the models);
 * - `shuffle`: the ranks are dealt to the models anew, at random (seeded).
 * Both keep the shape of the popularity (its Zipf skew) and change only who has it, so every
 * load step of a sweep sees the same skew and the knee stays comparable between steps.
 */
export type Drift =
  | { readonly kind: "rotate"; readonly everySeconds: number; readonly by: number }
  | { readonly kind: "shuffle"; readonly everySeconds: number; readonly seed: number };

export function compilePopularity(
  raw: unknown,
  models: number,
  where: string,
  seed: number,
): Popularity {
  if (raw === undefined) return { weights: Array.from({ length: models }, () => 1) };
  const p = object(raw, where, ["zipf", "drift"]);
  const weights =
    p["zipf"] === undefined
      ? Array.from({ length: models }, () => 1)
      : zipfWeights(models, number(p["zipf"], `${where}.zipf`, 0, 10));
  if (p["drift"] === undefined) return { weights };
  const d = object(p["drift"], `${where}.drift`, ["every_seconds", "rotate", "shuffle"]);
  const everySeconds = number(d["every_seconds"], `${where}.drift.every_seconds`, 0.1, 86_400);
  if ((d["rotate"] === undefined) === (d["shuffle"] === undefined)) {
    throw new WorkloadError(`${where}.drift must have one of rotate (models to move by), shuffle`);
  }
  if (d["shuffle"] !== undefined) {
    if (d["shuffle"] !== true) throw new WorkloadError(`${where}.drift.shuffle must be true`);
    return { weights, drift: { kind: "shuffle", everySeconds, seed } };
  }
  const by = number(d["rotate"], `${where}.drift.rotate`, 1, Math.max(1, models - 1));
  if (!Number.isInteger(by)) throw new WorkloadError(`${where}.drift.rotate must be an integer`);
  return { weights, drift: { kind: "rotate", everySeconds, by } };
}

/** The drift epoch a moment of the sweep's clock falls in (0 without drift). */
export function epochAt(p: Popularity, seconds: number): number {
  return p.drift === undefined ? 0 : Math.floor(seconds / p.drift.everySeconds);
}

/** When `epoch` ends on the sweep's clock, s (never, without drift). */
export function epochEnd(p: Popularity, epoch: number): number {
  return p.drift === undefined ? Infinity : (epoch + 1) * p.drift.everySeconds;
}

/** Each model's weight during `epoch`, in the entry's model order. */
export function weightsIn(p: Popularity, epoch: number): number[] {
  const n = p.weights.length;
  const drift = p.drift;
  if (drift === undefined || epoch === 0) return [...p.weights];
  if (drift.kind === "rotate") {
    const shift = (drift.by * epoch) % n;
    return Array.from({ length: n }, (_, i) => p.weights[(((i - shift) % n) + n) % n] as number);
  }
  // Fisher–Yates with a generator seeded by the epoch, so any epoch is dealt without the ones
  // before it.
  const random = new Random((drift.seed + Math.imul(epoch, 0x85ebca6b)) >>> 0);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const out = new Array<number>(n);
  order.forEach((model, rank) => (out[model] = p.weights[rank] as number));
  return out;
}
