/**
 * Turns on one accelerator for the batches of every model a worker holds. Each model's puller
 * forms and sends its own batches; on an accelerator shared by several models they would all
 * be handed to the device at once and queue there, each batch then taking as long as the ones
 * ahead of it, which the pullers' latency models learn as their own cost and answer with ever
 * smaller batches. With turns, a puller that has work waits for the device first and forms its
 * batch when its turn comes, from everything queued for its model by then: the device runs one
 * batch (or `slots`) at a time, the turns go in the order the models became ready, and every
 * batch's measured time is its own.
 */
export class DeviceTurns {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  /** @param slots batches the accelerator runs at once, across all models. */
  constructor(readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) {
      throw new RangeError(`device turns: slots must be a positive integer, got ${slots}`);
    }
    this.#free = slots;
  }

  /** Waits for a turn; the returned function ends it (calling it again does nothing). */
  async acquire(): Promise<() => void> {
    if (this.#free > 0) {
      this.#free--;
    } else {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const next = this.#waiting.shift();
      // The turn passes straight to the next in line, so nobody can jump the queue.
      if (next === undefined) this.#free++;
      else next();
    };
  }

  /** Pullers waiting for a turn now. */
  get waiting(): number {
    return this.#waiting.length;
  }
}
