/** Bounds of a {@link HeldQueue}. */
export interface HeldQueueLimits {
  /** Most items held at once, across models. */
  readonly maxItems: number;
  /** Most bytes held at once, across models. */
  readonly maxBytes: number;
  /** Longest an item is held before it is handed back to JetStream. */
  readonly holdMs: number;
}

interface Entry<T> {
  readonly value: T;
  readonly bytes: number;
  readonly heldAtMs: number;
}

/**
 * What the local queue holds: per model, items in the order they were put, bounded in count and
 * bytes, each for at most `holdMs`. Pure (the caller passes the clock), so the decisions —
 * what is accepted, who gets what, what goes back — are unit-tested without sockets or NATS.
 */
export class HeldQueue<T> {
  readonly #limits: HeldQueueLimits;
  readonly #byModel = new Map<string, Entry<T>[]>();
  #size = 0;
  #bytes = 0;

  constructor(limits: HeldQueueLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Holds as many of `items` as the bounds allow, in order, and returns how many: a prefix, so
   * the caller knows exactly which ones it still has to put back itself.
   */
  put(model: string, items: readonly { value: T; bytes: number }[], nowMs: number): number {
    let accepted = 0;
    for (const item of items) {
      if (this.#size + 1 > this.#limits.maxItems) break;
      if (this.#bytes + item.bytes > this.#limits.maxBytes) break;
      let queue = this.#byModel.get(model);
      if (queue === undefined) {
        queue = [];
        this.#byModel.set(model, queue);
      }
      queue.push({ value: item.value, bytes: item.bytes, heldAtMs: nowMs });
      this.#size++;
      this.#bytes += item.bytes;
      accepted++;
    }
    return accepted;
  }

  /** Removes and returns up to `max` of the model's items, oldest first. */
  take(model: string, max: number): T[] {
    const queue = this.#byModel.get(model);
    if (queue === undefined) return [];
    const taken = queue.splice(0, max);
    if (queue.length === 0) this.#byModel.delete(model);
    return this.#released(taken);
  }

  /** Removes and returns every item held for `holdMs` or longer at `nowMs`. */
  expire(nowMs: number): T[] {
    const out: Entry<T>[] = [];
    for (const [model, queue] of this.#byModel) {
      // Items of one model are held in put order, so the expired ones are a prefix.
      let n = 0;
      while (n < queue.length && nowMs - (queue[n] as Entry<T>).heldAtMs >= this.#limits.holdMs)
        n++;
      out.push(...queue.splice(0, n));
      if (queue.length === 0) this.#byModel.delete(model);
    }
    return this.#released(out);
  }

  /** When the next item expires, or undefined when nothing is held. */
  nextExpiryMs(): number | undefined {
    let first: number | undefined;
    for (const queue of this.#byModel.values()) {
      const head = queue[0];
      if (head !== undefined && (first === undefined || head.heldAtMs < first))
        first = head.heldAtMs;
    }
    return first === undefined ? undefined : first + this.#limits.holdMs;
  }

  /** Every item held now, without removing any. */
  *values(): Generator<T> {
    for (const queue of this.#byModel.values()) for (const e of queue) yield e.value;
  }

  /** Removes and returns everything. */
  drain(): T[] {
    const all = [...this.#byModel.values()].flat();
    this.#byModel.clear();
    return this.#released(all);
  }

  #released(entries: readonly Entry<T>[]): T[] {
    for (const e of entries) {
      this.#size--;
      this.#bytes -= e.bytes;
    }
    return entries.map((e) => e.value);
  }
}
