import { WorkloadError } from "./workload-error.js";

/** A workload file's object, once checked to be one. */
export type Obj = Record<string, unknown>;

export function object(raw: unknown, where: string, keys: readonly string[]): Obj {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new WorkloadError(`${where} must be an object`);
  }
  const unknown = Object.keys(raw).filter((k) => !keys.includes(k));
  if (unknown.length > 0) throw new WorkloadError(`${where}: unknown key ${unknown[0]}`);
  return raw as Obj;
}

export function number(raw: unknown, where: string, min: number, max: number): number {
  if (typeof raw !== "number" || !Number.isFinite(raw) || raw < min || raw > max) {
    throw new WorkloadError(
      `${where} must be a number in ${min}..=${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

export function integer(raw: unknown, where: string, min: number, max: number): number {
  const n = number(raw, where, min, max);
  if (!Number.isInteger(n)) throw new WorkloadError(`${where} must be an integer, got ${n}`);
  return n;
}
