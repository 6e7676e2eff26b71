/**
 * The conventional way a fleet of per-model deployments follows demand, for the bench's router
 * baseline: each model is a replica set behind the router, resized by a reactive autoscaler on
 * queue lag, as Kubernetes' HorizontalPodAutoscaler does with a KEDA queue-lag metric.
 *
 * - Desired replicas are `ceil(lag / targetLagPerReplica)` (HPA's `ceil(current × metric /
 *   target)` with the lag per replica as the metric), within `[minReplicas, maxReplicas]`, and
 *   at least one while work waits for a model that has none (KEDA's activation).
 * - Scaling up acts at once; scaling down takes the highest recommendation of the last
 *   `scaleDownWindowMs` (HPA's scale-down stabilization window), so a dip does not drop a
 *   replica that the next burst needs.
 * - A new replica goes to the accelerator with the most free memory that does not hold the
 *   model (the Kubernetes scheduler's least-allocated scoring); one that fits nowhere waits,
 *   as a pending pod does. Nothing is evicted to make room: another model's replicas leave
 *   only when its own autoscaler scales it down.
 * - Scaling down removes the replica with the least queued, which the router stops sending to
 *   and which is unloaded once its queue is empty (a pod's endpoints removed, then drained);
 *   not while another replica of the model is still loading, which could leave none ready.
 * - With `fillMemory`, the memory the minimum replicas leave is shared among the models in
 *   proportion to their recent arrival rates, and a model is sized to the larger of that share
 *   and its lag: a router that knows what is resident and loads ahead of the lag, as pull
 *   mode's model-loader fills free memory with spare copies. The share moves with demand, so a
 *   model that cools is scaled down (after the window) and its memory goes to the one that
 *   warmed.
 *
 * Pure: the driver (`autoscaler.ts`) measures, applies the decisions and learns the outcomes.
 */

import { memoryShares, type Recommendations } from "@shoal/residency";

export interface AutoscalePolicyOptions {
  /** Queued items per replica the autoscaler aims at (KEDA's `lagThreshold`). */
  readonly targetLagPerReplica: number;
  /** Replicas a model keeps whatever its lag. @default 1 */
  readonly minReplicas?: number;
  /** @default Infinity */
  readonly maxReplicas?: number;
  /** How long a scale-down recommendation must hold, ms (HPA's default is 300 s). */
  readonly scaleDownWindowMs: number;
  /** Share of each accelerator's memory no replica is placed in. @default 0.1 */
  readonly headroomFraction?: number;
  /** Give the memory the minimum leaves to the models by arrival rate. @default false */
  readonly fillMemory?: boolean;
}

export type ReplicaPhase = "loading" | "ready" | "draining";

export interface AutoscaleReplica {
  readonly worker: string;
  readonly phase: ReplicaPhase;
  /** Items queued for this replica now. */
  readonly lag: number;
}

export interface AutoscaleModel {
  readonly model: string;
  readonly bytes: number;
  readonly replicas: readonly AutoscaleReplica[];
  /** Items waiting at the router because the model has no replica to send them to. */
  readonly held: number;
  /** Items a second routed to it lately (only `fillMemory` reads it). */
  readonly rate: number;
}

export interface AutoscaleWorker {
  readonly worker: string;
  readonly capacityBytes: number;
  /** Bytes its replicas take, loading and draining ones included. */
  readonly usedBytes: number;
  /** A load or unload is under way: one at a time per accelerator. */
  readonly busy: boolean;
}

export type AutoscaleAction =
  | { readonly kind: "scale-up"; readonly model: string; readonly worker: string }
  | { readonly kind: "drain"; readonly model: string; readonly worker: string }
  | { readonly kind: "unload"; readonly model: string; readonly worker: string };

export function planAutoscale(
  models: readonly AutoscaleModel[],
  workers: readonly AutoscaleWorker[],
  recommendations: Recommendations,
  nowMs: number,
  o: AutoscalePolicyOptions,
): AutoscaleAction[] {
  const min = o.minReplicas ?? 1;
  const max = o.maxReplicas ?? Infinity;
  const headroom = o.headroomFraction ?? 0.1;
  const actions: AutoscaleAction[] = [];
  const free = new Map(
    workers.map((w) => [w.worker, w.capacityBytes * (1 - headroom) - w.usedBytes]),
  );
  const busy = new Set(workers.filter((w) => w.busy).map((w) => w.worker));
  const share =
    o.fillMemory === true
      ? memoryShares(
          models,
          workers.reduce((n, w) => n + w.capacityBytes * (1 - headroom), 0),
          workers.length,
          min,
        )
      : undefined;

  // A drained replica has nothing queued left: it can go.
  for (const m of models) {
    for (const r of m.replicas) {
      if (r.phase === "draining" && r.lag === 0 && !busy.has(r.worker)) {
        actions.push({ kind: "unload", model: m.model, worker: r.worker });
        busy.add(r.worker);
      }
    }
  }

  const byLag = [...models].sort((a, b) => lagOf(b) - lagOf(a) || a.model.localeCompare(b.model));
  for (const m of byLag) {
    const serving = m.replicas.filter((r) => r.phase !== "draining");
    const raw = Math.min(
      max,
      Math.max(
        min,
        Math.ceil(lagOf(m) / o.targetLagPerReplica),
        m.held > 0 ? 1 : 0,
        share?.get(m.model) ?? 0,
      ),
    );
    const desired = recommendations.stabilized(m.model, raw, nowMs, o.scaleDownWindowMs);
    if (desired > serving.length) {
      for (let i = serving.length; i < desired; i++) {
        const target = workers
          .filter((w) => !busy.has(w.worker) && !m.replicas.some((r) => r.worker === w.worker))
          .filter((w) => (free.get(w.worker) ?? 0) >= m.bytes)
          .sort(
            (a, b) =>
              (free.get(b.worker) ?? 0) - (free.get(a.worker) ?? 0) ||
              a.worker.localeCompare(b.worker),
          )[0];
        if (target === undefined) break;
        actions.push({ kind: "scale-up", model: m.model, worker: target.worker });
        busy.add(target.worker);
        free.set(target.worker, (free.get(target.worker) ?? 0) - m.bytes);
      }
    } else if (desired < serving.length && !serving.some((r) => r.phase === "loading")) {
      // Not while a replica loads: draining a ready one then could leave none to send to.
      const ready = serving
        .filter((r) => r.phase === "ready")
        .sort((a, b) => a.lag - b.lag || a.worker.localeCompare(b.worker));
      for (const r of ready.slice(0, serving.length - desired)) {
        actions.push({ kind: "drain", model: m.model, worker: r.worker });
      }
    }
  }
  return actions;
}

/** Everything queued for a model: at its replicas and held at the router. */
function lagOf(m: AutoscaleModel): number {
  return m.held + m.replicas.reduce((n, r) => n + r.lag, 0);
}
