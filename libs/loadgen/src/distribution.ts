import type { Random } from "./random.js";
import { WorkloadError } from "./workload-error.js";

/**
 * A distribution of positive integers (token counts, inputs per request), as a workload file
 * writes it: `{"constant": 64}`, `{"uniform": [8, 250]}` (inclusive) or
 * `{"lognormal": {"median": 64, "sigma": 0.7}}`, each with optional `min` and `max` clamps.
 * Log-normal is the usual shape of request lengths: most short, a long tail.
 */
export type Distribution =
  | { readonly kind: "constant"; readonly value: number }
  | { readonly kind: "uniform"; readonly low: number; readonly high: number }
  | {
      readonly kind: "lognormal";
      readonly median: number;
      readonly sigma: number;
      readonly min: number;
      readonly max: number;
    };

/** Draws one value. */
export function sample(d: Distribution, random: Random): number {
  switch (d.kind) {
    case "constant":
      return d.value;
    case "uniform":
      return d.low + Math.floor(random.next() * (d.high - d.low + 1));
    case "lognormal": {
      const x = Math.round(d.median * Math.exp(d.sigma * random.normal()));
      return Math.min(d.max, Math.max(d.min, x));
    }
  }
}

/** The mean of a distribution (log-normal: of the unclamped one), for planning rates. */
export function mean(d: Distribution): number {
  switch (d.kind) {
    case "constant":
      return d.value;
    case "uniform":
      return (d.low + d.high) / 2;
    case "lognormal":
      return Math.min(d.max, Math.max(d.min, d.median * Math.exp((d.sigma * d.sigma) / 2)));
  }
}

const MAX = 1_000_000;

function positiveInt(raw: unknown, where: string): number {
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < 1 || raw > MAX) {
    throw new WorkloadError(
      `${where} must be an integer in 1..=${MAX}, got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

/** Validates a distribution as a workload file writes it. */
export function compileDistribution(raw: unknown, where: string): Distribution {
  if (typeof raw === "number") return { kind: "constant", value: positiveInt(raw, where) };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new WorkloadError(
      `${where} must be a number or an object with one of constant, uniform, lognormal`,
    );
  }
  const obj = raw as Record<string, unknown>;
  const kinds = ["constant", "uniform", "lognormal"].filter((k) => k in obj);
  const unknown = Object.keys(obj).filter(
    (k) => !["constant", "uniform", "lognormal", "min", "max"].includes(k),
  );
  if (unknown.length > 0) throw new WorkloadError(`${where}: unknown key ${unknown[0]}`);
  if (kinds.length !== 1) {
    throw new WorkloadError(`${where} must have exactly one of constant, uniform, lognormal`);
  }
  const min = obj["min"] === undefined ? 1 : positiveInt(obj["min"], `${where}.min`);
  const max = obj["max"] === undefined ? MAX : positiveInt(obj["max"], `${where}.max`);
  if (min > max) throw new WorkloadError(`${where}: min ${min} is above max ${max}`);
  const clamp = (v: number): number => Math.min(max, Math.max(min, v));
  if ("constant" in obj) {
    return { kind: "constant", value: clamp(positiveInt(obj["constant"], `${where}.constant`)) };
  }
  if ("uniform" in obj) {
    const u = obj["uniform"];
    if (!Array.isArray(u) || u.length !== 2) {
      throw new WorkloadError(`${where}.uniform must be [low, high]`);
    }
    const low = clamp(positiveInt(u[0], `${where}.uniform[0]`));
    const high = clamp(positiveInt(u[1], `${where}.uniform[1]`));
    if (low > high) throw new WorkloadError(`${where}.uniform: low ${low} is above high ${high}`);
    return { kind: "uniform", low, high };
  }
  const l = obj["lognormal"];
  if (typeof l !== "object" || l === null || Array.isArray(l)) {
    throw new WorkloadError(`${where}.lognormal must be {"median": m, "sigma": s}`);
  }
  const ln = l as Record<string, unknown>;
  const extra = Object.keys(ln).filter((k) => k !== "median" && k !== "sigma");
  if (extra.length > 0) throw new WorkloadError(`${where}.lognormal: unknown key ${extra[0]}`);
  const median = positiveInt(ln["median"], `${where}.lognormal.median`);
  const sigma = ln["sigma"];
  if (typeof sigma !== "number" || !Number.isFinite(sigma) || sigma < 0 || sigma > 4) {
    throw new WorkloadError(
      `${where}.lognormal.sigma must be a number in 0..=4, got ${JSON.stringify(sigma)}`,
    );
  }
  return { kind: "lognormal", median, sigma, min, max };
}
