/**
 * What went wrong with a load, as far as placement is concerned:
 *
 * - `out-of-memory`: the accelerator could not hold the model (the sidecar said so, or the
 *   size it reported does not fit the memory left). Evicting more may help: retried once.
 * - `failed`: anything else (missing or corrupt files, unsupported architecture). Retrying
 *   elsewhere does not help; the model is blocked for a cooldown.
 */
export type LoadFailureKind = "out-of-memory" | "failed";

/** What the model-loader does next for the model. */
export type LoadVerdict =
  | { readonly next: "retry" }
  | { readonly next: "unplaceable"; readonly message: string }
  | { readonly next: "blocked"; readonly message: string };

const OOM = /out of memory|\boom\b|CUDA_ERROR_OUT_OF_MEMORY|cannot allocate|alloc(ation)? failed/i;

/** Whether a sidecar error message describes an allocation failure. */
export function isOutOfMemoryMessage(message: string): boolean {
  return OOM.test(message);
}

/**
 * Counts out-of-memory failures per model: the first one is retried (the loader has learnt the
 * real size by then, so the retry evicts enough), the second makes the model unplaceable. A
 * successful load clears the count.
 */
export class LoadFailures {
  readonly #oom = new Map<string, number>();

  /** Records a failed load of `model` and says what to do about it. */
  failed(model: string, kind: LoadFailureKind, message: string): LoadVerdict {
    if (kind === "failed") {
      this.#oom.delete(model);
      return { next: "blocked", message };
    }
    const count = (this.#oom.get(model) ?? 0) + 1;
    if (count === 1) {
      this.#oom.set(model, count);
      return { next: "retry" };
    }
    this.#oom.delete(model);
    return {
      next: "unplaceable",
      message: `out of memory twice, after evicting to make room: ${message}`,
    };
  }

  /** A load of `model` succeeded. */
  succeeded(model: string): void {
    this.#oom.delete(model);
  }
}
