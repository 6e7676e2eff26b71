import type { CompiledResidencyPolicyOptions } from "./options.js";
import type { ModelDemand, Replica, ResidencySnapshot, WorkerMemory } from "./snapshot.js";
import { demand, keepValue, loadNeed } from "./value.js";

/** Why a copy is being loaded. */
export type LoadReason = "pinned" | "demand" | "replicate" | "spare";

/** One step the model-loader should take; a plan lists them in the order to start them. */
export type ResidencyAction =
  | {
      readonly kind: "load";
      readonly model: string;
      readonly worker: string;
      /** Copies on that worker to unload first, to make room. */
      readonly evict: readonly string[];
      readonly reason: LoadReason;
    }
  | {
      readonly kind: "unload";
      readonly model: string;
      readonly worker: string;
      /**
       * `idle-copy`: an extra copy that has had no work for `idleDropMs`; `over-share`: a
       * spare copy above the model's share of memory.
       */
      readonly reason: "idle-copy" | "over-share";
    }
  | {
      readonly kind: "unplaceable";
      readonly model: string;
      /** For the API and the log: the sizes that do not fit. */
      readonly message: string;
    };

/** Mutable working copy of one worker while a plan is made. */
interface Slot {
  readonly worker: string;
  readonly usableBytes: number;
  replicas: Replica[];
  /** A load or unload is under way (or was just planned): one at a time per accelerator. */
  busy: boolean;
}

/**
 * Decides what to load and unload on one node now. Pure and deterministic.
 *
 * 1. A pinned model with fewer copies than it keeps (one, or its `copies`), then every model
 *    with pending work and no copy (most needed first), gets one on a worker with room, or on
 *    the worker where the copies it
 *    displaces are worth least (demand, recency and reload cost: {@link keepValue}). A victim
 *    must have been resident `minResidencyMs`, must not be pinned, and must be worth less than
 *    the waiting model's need by `evictMargin`: that hysteresis is what keeps two alternating
 *    models from trading a slot back and forth.
 * 2. A model whose queue per copy exceeds `replicateAbovePending` gets the copies its queue asks
 *    for (`ceil(pending / replicateAbovePending)`, all in one round), by the same rules.
 * 3. An extra copy of a model without demand for `idleDropMs` is unloaded, never one a pinned
 *    model keeps.
 * 4. With `spareCopies`, a worker with free memory and nothing to do takes one more copy of the
 *    model with the most demand per copy, without evicting anything; with shares given
 *    (`shareCopies`), only a model below its share, and a copy above a model's share (never its
 *    last, nor one a pinned model keeps) is unloaded.
 *
 * A model that cannot fit on any worker even with everything evictable gone is reported
 * unplaceable instead of waiting forever. At most one load or unload is planned per worker and
 * none on a worker already loading or unloading, so loads never pile up on one accelerator.
 */
export function planResidency(
  snapshot: ResidencySnapshot,
  o: CompiledResidencyPolicyOptions,
): ResidencyAction[] {
  const { nowMs } = snapshot;
  const models = new Map(snapshot.models.map((m) => [m.model, m]));
  const slots = snapshot.workers.map((w) => toSlot(w, o));
  if (slots.length === 0) return [];
  const actions: ResidencyAction[] = [];
  const copies = (model: string): number =>
    slots.reduce(
      (n, s) => n + s.replicas.filter((r) => r.model === model && r.state !== "evicting").length,
      0,
    );

  const place = (m: ModelDemand, need: number, reason: LoadReason): void => {
    const room = Math.max(...slots.map((s) => s.usableBytes - pinnedBytes(s, models, m.model)));
    if (m.bytes > room) {
      actions.push({
        kind: "unplaceable",
        model: m.model,
        message:
          `needs ${m.bytes} bytes; the largest worker can give ${Math.max(0, room)} ` +
          `(its memory less headroom and pinned models)`,
      });
      return;
    }
    let best: { slot: Slot; victims: Replica[]; cost: number; freeAfter: number } | undefined;
    for (const slot of slots) {
      if (slot.busy || slot.replicas.some((r) => r.model === m.model)) continue;
      const option = victimsFor(slot, m, need, models, copies, nowMs, o);
      if (option === undefined) continue;
      if (
        best === undefined ||
        option.cost < best.cost ||
        (option.cost === best.cost && option.victims.length < best.victims.length) ||
        (option.cost === best.cost &&
          option.victims.length === best.victims.length &&
          option.freeAfter > best.freeAfter)
      ) {
        best = { slot, ...option };
      }
    }
    if (best === undefined) return;
    const { slot, victims } = best;
    slot.replicas = slot.replicas.filter((r) => !victims.includes(r));
    slot.replicas.push({ model: m.model, state: "loading", bytes: m.bytes, since: nowMs });
    slot.busy = true;
    actions.push({
      kind: "load",
      model: m.model,
      worker: slot.worker,
      evict: victims.map((v) => v.model),
      reason,
    });
  };

  const waiting = snapshot.models
    .filter(
      (m) =>
        !m.blocked && (copies(m.model) < keptCopies(m) || (copies(m.model) === 0 && m.pending > 0)),
    )
    .map((m) => ({ m, need: loadNeed(m, nowMs, o) }))
    .sort((a, b) => b.need - a.need || a.m.model.localeCompare(b.m.model));
  for (const { m, need } of waiting) place(m, need, m.pinned ? "pinned" : "demand");

  const crowded = snapshot.models
    .filter((m) => !m.blocked && settledCopies(slots, m.model, nowMs, o) === copies(m.model))
    .map((m) => ({ m, perCopy: m.pending / Math.max(1, copies(m.model)) }))
    .filter(({ m, perCopy }) => copies(m.model) > 0 && perCopy > o.replicateAbovePending)
    .sort((a, b) => b.perCopy - a.perCopy || a.m.model.localeCompare(b.m.model));
  for (const { m, perCopy } of crowded) {
    // As many copies at once as the queue asks for (HPA's ceil(metric / target)): one at a time,
    // each waiting for the last to settle, a burst on a cold model would wait several loads.
    const wanted = Math.ceil(m.pending / o.replicateAbovePending) - copies(m.model);
    for (let i = 0; i < wanted; i++) {
      const before = actions.length;
      place(m, perCopy, "replicate");
      if (actions.length === before || actions.at(-1)?.kind !== "load") break;
    }
  }

  for (const m of snapshot.models) {
    if (!isIdle(m, nowMs, o) || copies(m.model) <= Math.max(1, keptCopies(m))) continue;
    const extra = newestSettledCopy(slots, m.model, nowMs, o);
    if (extra === undefined) continue;
    extra.s.replicas = extra.s.replicas.filter((r) => r !== extra.r);
    extra.s.busy = true;
    actions.push({ kind: "unload", model: m.model, worker: extra.s.worker, reason: "idle-copy" });
  }

  if (o.spareCopies === 1) {
    for (const m of snapshot.models) {
      const share = m.shareCopies;
      if (share === undefined || copies(m.model) <= Math.max(1, keptCopies(m), share)) continue;
      const over = newestSettledCopy(slots, m.model, nowMs, o);
      if (over === undefined) continue;
      over.s.replicas = over.s.replicas.filter((r) => r !== over.r);
      over.s.busy = true;
      actions.push({ kind: "unload", model: m.model, worker: over.s.worker, reason: "over-share" });
    }
    for (const slot of slots) {
      if (slot.busy) continue;
      const free = slot.usableBytes - usedBytes(slot);
      const pick = snapshot.models
        .filter((m) => !m.blocked && m.bytes <= free && !isIdle(m, nowMs, o))
        .filter((m) => m.shareCopies === undefined || copies(m.model) < m.shareCopies)
        .filter((m) => !slot.replicas.some((r) => r.model === m.model))
        .filter(
          (m) => copies(m.model) > 0 && settledCopies(slots, m.model, nowMs, o) === copies(m.model),
        )
        .map((m) => ({ m, perCopy: demand(m, o) / copies(m.model) }))
        .filter(({ perCopy }) => perCopy > 0)
        .sort((a, b) => b.perCopy - a.perCopy || a.m.model.localeCompare(b.m.model))[0];
      if (pick === undefined) continue;
      slot.replicas.push({
        model: pick.m.model,
        state: "loading",
        bytes: pick.m.bytes,
        since: nowMs,
      });
      slot.busy = true;
      actions.push({
        kind: "load",
        model: pick.m.model,
        worker: slot.worker,
        evict: [],
        reason: "spare",
      });
    }
  }
  return actions;
}

/** The copy of `model` loaded last, among those settled on workers with nothing under way. */
function newestSettledCopy(
  slots: readonly Slot[],
  model: string,
  nowMs: number,
  o: CompiledResidencyPolicyOptions,
): { s: Slot; r: Replica } | undefined {
  return slots
    .filter((s) => !s.busy)
    .flatMap((s) => s.replicas.map((r) => ({ s, r })))
    .filter(({ r }) => r.model === model && r.state === "resident")
    .filter(({ r }) => nowMs - r.since >= o.minResidencyMs)
    .sort((a, b) => b.r.since - a.r.since || a.s.worker.localeCompare(b.s.worker))[0];
}

/** Copies the node keeps of `m` whatever the demand. */
function keptCopies(m: ModelDemand): number {
  return m.pinned ? Math.max(1, m.copies ?? 1) : 0;
}

/** What of a worker's memory placement may plan into: its capacity less the headroom. */
export function usableBytes(capacityBytes: number, o: CompiledResidencyPolicyOptions): number {
  return capacityBytes - Math.max(o.headroomBytes, o.headroomFraction * capacityBytes);
}

function toSlot(w: WorkerMemory, o: CompiledResidencyPolicyOptions): Slot {
  return {
    worker: w.worker,
    usableBytes: usableBytes(w.capacityBytes, o),
    replicas: [...w.replicas],
    busy: w.replicas.some((r) => r.state !== "resident"),
  };
}

function usedBytes(slot: Slot): number {
  return slot.replicas.reduce((n, r) => n + r.bytes, 0);
}

/** Memory on a worker that no eviction can free: pinned copies of models other than `except`. */
function pinnedBytes(slot: Slot, models: ReadonlyMap<string, ModelDemand>, except: string): number {
  return slot.replicas
    .filter((r) => r.model !== except && models.get(r.model)?.pinned === true)
    .reduce((n, r) => n + r.bytes, 0);
}

/**
 * The cheapest set of copies to unload on `slot` so `m` fits, or undefined when the copies that
 * may go are not enough or are worth too much to displace for `need`.
 */
function victimsFor(
  slot: Slot,
  m: ModelDemand,
  need: number,
  models: ReadonlyMap<string, ModelDemand>,
  copies: (model: string) => number,
  nowMs: number,
  o: CompiledResidencyPolicyOptions,
): { victims: Replica[]; cost: number; freeAfter: number } | undefined {
  let free = slot.usableBytes - usedBytes(slot);
  if (free >= m.bytes) return { victims: [], cost: 0, freeAfter: free - m.bytes };
  const ranked = slot.replicas
    .filter((r) => r.state === "resident" && nowMs - r.since >= o.minResidencyMs)
    .map((r) => ({ r, demand: models.get(r.model) }))
    .filter((v): v is { r: Replica; demand: ModelDemand } => v.demand?.pinned === false)
    .map(({ r, demand }) => ({ r, keep: keepValue(demand, copies(r.model), nowMs, o) }))
    .sort((a, b) => a.keep - b.keep || a.r.model.localeCompare(b.r.model));
  const victims: Replica[] = [];
  let cost = 0;
  for (const { r, keep } of ranked) {
    if (free >= m.bytes) break;
    if (keep * (1 + o.evictMargin) >= need) return undefined;
    victims.push(r);
    cost += keep;
    free += r.bytes;
  }
  return free >= m.bytes ? { victims, cost, freeAfter: free - m.bytes } : undefined;
}

/** Copies of `model` resident for at least `minResidencyMs` (a replica that has settled). */
function settledCopies(
  slots: readonly Slot[],
  model: string,
  nowMs: number,
  o: CompiledResidencyPolicyOptions,
): number {
  return slots
    .flatMap((s) => s.replicas)
    .filter(
      (r) => r.model === model && r.state === "resident" && nowMs - r.since >= o.minResidencyMs,
    ).length;
}

function isIdle(m: ModelDemand, nowMs: number, o: CompiledResidencyPolicyOptions): boolean {
  return (
    m.pending === 0 &&
    m.ratePerS < o.idleRatePerS &&
    (m.lastDemandAt === undefined || nowMs - m.lastDemandAt >= o.idleDropMs)
  );
}
