import type { WorkerView } from "./worker-view.js";

/**
 * How a top-down router picks a worker for an item, as production routers do it:
 *
 * - `round-robin`: the next candidate in turn, blind to load (nginx's and most L7 proxies'
 *   default);
 * - `least-outstanding`: the candidate with the fewest items outstanding in the view (Envoy's
 *   and Linkerd's least-request; ties go to the one after the last choice, so equal workers
 *   share the load);
 * - `power-of-two`: two distinct candidates at random, the less loaded of the two
 *   (Mitzenmacher's power of two choices; Envoy's least-request default), which herds less
 *   than least-outstanding when the view is stale;
 * - `random`: any candidate, uniformly (Envoy's `RANDOM`): the naive baseline the others must
 *   beat to count as strong, blind to load and to the view.
 */
export type RoutingPolicy = "round-robin" | "least-outstanding" | "power-of-two" | "random";

/** The policies a comparison runs by default: the load-aware ones and the naive baseline. */
export const ROUTING_POLICIES: readonly RoutingPolicy[] = [
  "round-robin",
  "least-outstanding",
  "power-of-two",
  "random",
];

/** Policies that never read the view, so its refresh interval does not change them. */
export const VIEW_BLIND_POLICIES: readonly RoutingPolicy[] = ["round-robin", "random"];

/** Picks workers for one model under one policy; keeps the round-robin position. */
export class Chooser {
  #next = 0;

  constructor(
    readonly policy: RoutingPolicy,
    readonly random: () => number = Math.random,
  ) {}

  /** A worker among `candidates` (non-empty), judged by `view`. */
  choose(candidates: readonly string[], view: WorkerView): string {
    if (candidates.length === 0) throw new RangeError("Chooser.choose: no candidates");
    const at = (i: number): string => candidates[i % candidates.length] as string;
    switch (this.policy) {
      case "round-robin":
        return at(this.#next++);
      case "least-outstanding": {
        const start = this.#next++;
        let best = at(start);
        for (let i = 1; i < candidates.length; i++) {
          const w = at(start + i);
          if (view.outstanding(w) < view.outstanding(best)) best = w;
        }
        return best;
      }
      case "random":
        return at(Math.floor(this.random() * candidates.length));
      case "power-of-two": {
        if (candidates.length === 1) return at(0);
        const a = Math.floor(this.random() * candidates.length);
        const b = (a + 1 + Math.floor(this.random() * (candidates.length - 1))) % candidates.length;
        return view.outstanding(at(b)) < view.outstanding(at(a)) ? at(b) : at(a);
      }
    }
  }
}
