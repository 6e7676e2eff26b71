/**
 * A router's picture of its workers, as a top-down router has it: it knows exactly what it
 * sent each worker, but learns what a worker finished only from the worker's reports, and it
 * folds those in only when its view is refreshed, every R ms. Between refreshes a worker that
 * just went idle still looks as busy as at the last refresh.
 *
 * This is the generous version of such a router: outstanding work counts the router's own
 * sends immediately (a router that proxies the request knows them), so only completions are
 * stale.
 */
export class WorkerView {
  readonly #sent = new Map<string, number>();
  /** Completed counts as of the last refresh. */
  readonly #done = new Map<string, number>();
  /** Completed counts as last reported, applied at the next refresh. */
  readonly #reported = new Map<string, number>();
  readonly #models = new Map<string, ReadonlySet<string>>();

  /** A worker announcing itself and the models it serves. */
  join(worker: string, models: Iterable<string>): void {
    this.#models.set(worker, new Set(models));
    if (!this.#sent.has(worker)) {
      this.#sent.set(worker, 0);
      this.#done.set(worker, 0);
    }
  }

  /** A worker's report: how many routed items it has finished since it joined. */
  report(worker: string, completed: number): void {
    if (!this.#models.has(worker)) return;
    this.#reported.set(worker, Math.max(completed, this.#reported.get(worker) ?? 0));
  }

  /** Folds the reports received since the last refresh into the view. */
  refresh(): void {
    for (const [worker, completed] of this.#reported) this.#done.set(worker, completed);
  }

  /** Records `items` items sent to `worker` (one work message may carry several). */
  sent(worker: string, items = 1): void {
    this.#sent.set(worker, (this.#sent.get(worker) ?? 0) + items);
  }

  /** Takes back a send that did not happen after all. */
  unsent(worker: string, items = 1): void {
    this.#sent.set(worker, Math.max(0, (this.#sent.get(worker) ?? 0) - items));
  }

  /** Items sent to `worker` and not known to be finished. */
  outstanding(worker: string): number {
    return Math.max(0, (this.#sent.get(worker) ?? 0) - (this.#done.get(worker) ?? 0));
  }

  /** Workers serving `model`, in join order. */
  serving(model: string): string[] {
    return [...this.#models].filter(([, models]) => models.has(model)).map(([w]) => w);
  }
}
