import { HISTORY_POINTS } from "./snapshot.js";

/** One model's work queue, as one read of JetStream found it. */
export interface QueueReading {
  /** Unfinished messages by length bucket. */
  readonly buckets: ReadonlyMap<number, number>;
  readonly waiting: number;
  readonly held: number;
  /** Unix ms the oldest unfinished message was stored. */
  readonly oldestAt?: number;
  readonly deadLetters: number;
}

export interface QueueHistory {
  readonly depth: number[];
  readonly arrivals: number[];
  readonly completions: number[];
}

/** The last {@link HISTORY_POINTS} seconds of each model's queue, for the sparklines. */
export class QueueHistories {
  readonly #byModel = new Map<string, QueueHistory>();

  /** The model's sparklines so far (empty before its first point). */
  peek(model: string): QueueHistory {
    return this.#byModel.get(model) ?? { depth: [], arrivals: [], completions: [] };
  }

  push(model: string, depth: number, arrivals: number, completions: number): QueueHistory {
    const h = this.#byModel.get(model) ?? { depth: [], arrivals: [], completions: [] };
    this.#byModel.set(model, h);
    append(h.depth, depth);
    append(h.arrivals, arrivals);
    append(h.completions, completions);
    return h;
  }
}

function append(series: number[], value: number): void {
  series.push(value);
  if (series.length > HISTORY_POINTS) series.splice(0, series.length - HISTORY_POINTS);
}
