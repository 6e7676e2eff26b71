/**
 * Static residency for the fleet bench: which models each simulated accelerator holds for a
 * whole run, the same in pull and router mode. It is the router's best static case: copies in
 * proportion to popularity at the start of the run, and spread so that every accelerator's
 * expected load over its speed is as even as it can be.
 */
import { apportion, type AcceleratorClass } from "@shoal/loadgen";

/** One simulated accelerator and the models it holds. */
export interface PlacedAccelerator {
  readonly id: string;
  readonly speed: number;
  readonly memoryBytes: number;
  /** Catalog ids, most loaded copy first. */
  readonly models: readonly string[];
}

export interface PlacementInput {
  /** Catalog ids, in the workload's order. */
  readonly models: readonly string[];
  /** Each model's share of the load (its popularity at the start). */
  readonly weights: readonly number[];
  readonly accelerators: readonly AcceleratorClass[];
  /** Models each accelerator holds. */
  readonly perAccelerator: number;
  readonly modelMemoryBytes: number;
  /** Copies of each model, when a bundle fixes them (otherwise by popularity). */
  readonly replicas?: readonly number[];
}

export function placeFleet(input: PlacementInput): PlacedAccelerator[] {
  const accelerators = input.accelerators.flatMap((c) =>
    Array.from({ length: c.count }, () => ({ speed: c.speed, memoryBytes: c.memoryBytes })),
  );
  const slots = accelerators.length * input.perAccelerator;
  if (input.models.length > slots) {
    throw new RangeError(
      `${input.models.length} models do not fit in ${accelerators.length} accelerators × ` +
        `${input.perAccelerator} models each: static residency holds every model at once`,
    );
  }
  for (const a of accelerators) {
    if (input.perAccelerator * input.modelMemoryBytes > a.memoryBytes) {
      throw new RangeError(
        `${input.perAccelerator} models of ${input.modelMemoryBytes} bytes do not fit in an ` +
          `accelerator of ${a.memoryBytes} bytes`,
      );
    }
  }
  const copies = input.replicas
    ? apportion(input.replicas, slots)
    : cappedApportion(input.weights, slots, accelerators.length);
  if (copies.some((c) => c > accelerators.length)) {
    throw new RangeError(
      `a model cannot have more copies than the ${accelerators.length} accelerators`,
    );
  }
  const total = input.weights.reduce((a, b) => a + b, 0);
  const pending = input.models
    .flatMap((id, m) =>
      Array.from({ length: copies[m] as number }, () => ({
        id,
        load: (input.weights[m] as number) / total / (copies[m] as number),
      })),
    )
    .sort((a, b) => b.load - a.load || a.id.localeCompare(b.id));
  const state = accelerators.map((a) => ({ ...a, load: 0, models: [] as string[] }));
  for (const copy of pending) {
    let best: (typeof state)[number] | undefined;
    for (const a of state) {
      if (a.models.length >= input.perAccelerator || a.models.includes(copy.id)) continue;
      if (
        best === undefined ||
        (a.load + copy.load) / a.speed < (best.load + copy.load) / best.speed
      ) {
        best = a;
      }
    }
    if (best === undefined)
      throw new RangeError(`no accelerator has room for a copy of ${copy.id}`);
    best.models.push(copy.id);
    best.load += copy.load;
  }
  return state.map((a, i) => ({
    id: `a${i}`,
    speed: a.speed,
    memoryBytes: a.memoryBytes,
    models: a.models,
  }));
}

/**
 * Splits `slots` among models by weight, at least one each and at most `cap` (one copy per
 * accelerator): what a capped model cannot take goes to the others, by weight.
 */
function cappedApportion(weights: readonly number[], slots: number, cap: number): number[] {
  const fixed = new Map<number, number>();
  for (;;) {
    const free = weights.map((w, i) => [w, i] as const).filter(([, i]) => !fixed.has(i));
    const left = slots - [...fixed.values()].reduce((a, b) => a + b, 0);
    const shares =
      free.length === 0
        ? []
        : apportion(
            free.map(([w]) => w),
            Math.min(left, free.length * cap),
          );
    const over = free.filter((_, k) => (shares[k] as number) > cap);
    if (over.length === 0) {
      const out = weights.map((_, i) => fixed.get(i) ?? 0);
      free.forEach(([, i], k) => (out[i] = shares[k] as number));
      return out;
    }
    for (const [, i] of over) fixed.set(i, cap);
  }
}
