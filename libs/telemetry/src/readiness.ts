/**
 * Whether a process should be sent work now: ready when no component reports a problem.
 * Served as `/readyz` beside `/metrics` (an orchestrator's readiness probe), while `/healthz`
 * only says the process answers: a service that lost NATS stays alive and reconnects, marked
 * not ready, instead of being restarted in a loop.
 */
export class Readiness {
  readonly #problems = new Map<string, string>([["start", "starting"]]);

  /** Sets (a string) or clears (undefined) what keeps `component` from serving. */
  set(component: string, problem: string | undefined): void {
    if (problem === undefined) this.#problems.delete(component);
    else this.#problems.set(component, problem);
  }

  /** The service finished starting. */
  started(): void {
    this.set("start", undefined);
  }

  get ready(): boolean {
    return this.#problems.size === 0;
  }

  /** `component: problem` for each, sorted, for the probe's body and logs. */
  problems(): string[] {
    return [...this.#problems].map(([c, p]) => `${c}: ${p}`).sort();
  }
}
