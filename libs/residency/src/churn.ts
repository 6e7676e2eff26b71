/** Load and eviction counters a node reports, to see whether placement is thrashing. */
export interface ChurnReport {
  readonly loads: number;
  readonly evictions: number;
  /** Loads in the last minute. */
  readonly loadsLastMinute: number;
  /**
   * Loads of a model within `thrashWindowMs` of its eviction from the same node: each is a
   * load the policy would have saved by keeping the model.
   */
  readonly thrash: number;
}

/**
 * Counts loads and evictions with the caller's clock. Memory stays bounded: only the last
 * minute of load times and the last eviction per model are kept.
 */
export class ChurnCounter {
  readonly #thrashWindowMs: number;
  readonly #recentLoads: number[] = [];
  readonly #evictedAt = new Map<string, number>();
  #loads = 0;
  #evictions = 0;
  #thrash = 0;

  /** @param thrashWindowMs a reload this soon after an eviction counts as thrash. @default 60000 */
  constructor(thrashWindowMs = 60_000) {
    this.#thrashWindowMs = thrashWindowMs;
  }

  loaded(model: string, nowMs: number): void {
    this.#loads += 1;
    this.#recentLoads.push(nowMs);
    const evicted = this.#evictedAt.get(model);
    if (evicted !== undefined && nowMs - evicted <= this.#thrashWindowMs) this.#thrash += 1;
    this.#evictedAt.delete(model);
    this.#trim(nowMs);
  }

  evicted(model: string, nowMs: number): void {
    this.#evictions += 1;
    this.#evictedAt.set(model, nowMs);
  }

  report(nowMs: number): ChurnReport {
    this.#trim(nowMs);
    return {
      loads: this.#loads,
      evictions: this.#evictions,
      loadsLastMinute: this.#recentLoads.length,
      thrash: this.#thrash,
    };
  }

  #trim(nowMs: number): void {
    while (this.#recentLoads.length > 0 && nowMs - (this.#recentLoads[0] ?? nowMs) > 60_000) {
      this.#recentLoads.shift();
    }
  }
}
