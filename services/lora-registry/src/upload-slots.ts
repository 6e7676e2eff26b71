import { UnavailableError } from "./errors.js";

/**
 * Bounds the uploads read and validated at once: each holds up to the upload limit in memory,
 * so past the bound a new upload is answered 503 with `Retry-After` instead of growing the heap.
 */
export class UploadSlots {
  readonly #max: number;
  #active = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get active(): number {
    return this.#active;
  }

  /**
   * Takes a slot; call the returned function once to give it back.
   *
   * @throws UnavailableError when every slot is taken.
   */
  acquire(): () => void {
    if (this.#active >= this.#max) {
      throw new UnavailableError(`${this.#max} uploads are in progress; retry shortly`, 5);
    }
    this.#active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
    };
  }
}
