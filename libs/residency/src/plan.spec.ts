import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileResidencyPolicyOptions, type ResidencyPolicyOptions } from "./options.js";
import { planResidency, type ResidencyAction } from "./plan.js";
import type { ModelDemand, Replica, ResidencySnapshot, WorkerMemory } from "./snapshot.js";

const MB = 1_000_000;
const NOW = 1_000_000;
/** No headroom, so sizes in the tests read as slots; other knobs at their defaults. */
const base: ResidencyPolicyOptions = { headroomFraction: 0 };

function model(name: string, over: Partial<ModelDemand> = {}): ModelDemand {
  return {
    model: name,
    pinned: false,
    bytes: 100 * MB,
    loadMs: 200,
    pending: 0,
    ratePerS: 0,
    lastDemandAt: undefined,
    waitingSince: undefined,
    blocked: false,
    ...over,
  };
}

function resident(name: string, sinceAgoMs = 60_000, bytes = 100 * MB): Replica {
  return { model: name, state: "resident", bytes, since: NOW - sinceAgoMs };
}

function worker(id: string, replicas: Replica[] = [], capacityBytes = 300 * MB): WorkerMemory {
  return { worker: id, capacityBytes, replicas };
}

function plan(
  models: ModelDemand[],
  workers: WorkerMemory[],
  options: ResidencyPolicyOptions = {},
): ResidencyAction[] {
  const snapshot: ResidencySnapshot = { nowMs: NOW, models, workers };
  return planResidency(snapshot, compileResidencyPolicyOptions({ ...base, ...options }));
}

describe("planResidency: placement", () => {
  it("loads a pinned model with no copy even without work", () => {
    expect(plan([model("p", { pinned: true })], [worker("w1")])).toEqual([
      { kind: "load", model: "p", worker: "w1", evict: [], reason: "pinned" },
    ]);
  });

  it("loads a cold model only when work is pending for it", () => {
    expect(plan([model("a")], [worker("w1")])).toEqual([]);
    expect(plan([model("a", { pending: 1 })], [worker("w1")])).toEqual([
      { kind: "load", model: "a", worker: "w1", evict: [], reason: "demand" },
    ]);
  });

  it("does not load a model that already has a copy, resident or loading", () => {
    const loading: Replica = { model: "a", state: "loading", bytes: 100 * MB, since: NOW };
    expect(
      plan([model("a", { pending: 5 })], [worker("w1", [resident("a")]), worker("w2")]),
    ).toEqual([]);
    expect(plan([model("a", { pending: 5 })], [worker("w1", [loading]), worker("w2")])).toEqual([]);
  });

  it("prefers a worker with free memory over evicting anything", () => {
    const actions = plan(
      [model("a", { pending: 1 }), model("b"), model("c"), model("d"), model("e")],
      [worker("w1", [resident("b"), resident("c"), resident("d")]), worker("w2", [resident("e")])],
    );
    expect(actions).toEqual([
      { kind: "load", model: "a", worker: "w2", evict: [], reason: "demand" },
    ]);
  });

  it("plans at most one load per worker and never on a worker already loading", () => {
    const loading: Replica = { model: "x", state: "loading", bytes: 100 * MB, since: NOW };
    const actions = plan(
      [model("a", { pending: 9 }), model("b", { pending: 5 }), model("x")],
      [worker("w1", [loading]), worker("w2")],
    );
    expect(actions).toEqual([
      { kind: "load", model: "a", worker: "w2", evict: [], reason: "demand" },
    ]);
  });

  it("places the most needed model first", () => {
    const actions = plan([model("a", { pending: 1 }), model("b", { pending: 50 })], [worker("w1")]);
    expect(actions.map((a) => a.model)).toEqual(["b"]);
  });

  it("leaves blocked models alone", () => {
    expect(plan([model("a", { pending: 5, blocked: true })], [worker("w1")])).toEqual([]);
  });

  it("does nothing without workers", () => {
    expect(plan([model("a", { pending: 5, pinned: true })], [])).toEqual([]);
  });
});

describe("planResidency: eviction", () => {
  const full = (): WorkerMemory => worker("w1", [resident("b"), resident("c"), resident("d")]);

  it("evicts the copy worth least: no demand, long idle", () => {
    const actions = plan(
      [
        model("a", { pending: 4 }),
        model("b", { ratePerS: 1, lastDemandAt: NOW - 1000 }),
        model("c", { lastDemandAt: NOW - 600_000 }),
        model("d", { lastDemandAt: NOW - 1000 }),
      ],
      [full()],
    );
    expect(actions).toEqual([
      { kind: "load", model: "a", worker: "w1", evict: ["c"], reason: "demand" },
    ]);
  });

  it("is not LRU: an expensive-to-load model with arrivals stays over a cheap, idle recent one", () => {
    const actions = plan(
      [
        model("a", { pending: 30 }),
        // Used longest ago, but still receiving work and slow to load.
        model("b", { ratePerS: 0.5, lastDemandAt: NOW - 20_000, loadMs: 5000 }),
        // Used most recently, but nothing arrives for it any more.
        model("c", { lastDemandAt: NOW - 2000 }),
        model("d", { ratePerS: 1, lastDemandAt: NOW - 3000 }),
      ],
      [full()],
    );
    expect(actions[0]).toMatchObject({ kind: "load", model: "a", evict: ["c"] });
  });

  it("never evicts a pinned model, even for another pinned one", () => {
    const w = worker("w1", [resident("p1"), resident("p2"), resident("p3")]);
    const models = [
      model("p1", { pinned: true }),
      model("p2", { pinned: true }),
      model("p3", { pinned: true }),
      model("a", { pending: 1000, waitingSince: NOW - 600_000 }),
    ];
    const actions = plan(models, [w]);
    expect(actions).toEqual([
      {
        kind: "unplaceable",
        model: "a",
        message:
          "needs 100000000 bytes; the largest worker can give 0 (its memory less headroom and pinned models)",
      },
    ]);
  });

  it("evicts for a pinned model without a copy, whatever the victims are worth", () => {
    const actions = plan(
      [
        model("p", { pinned: true }),
        model("b", { pending: 100, ratePerS: 50, lastDemandAt: NOW }),
        model("c", { pending: 100, ratePerS: 50, lastDemandAt: NOW }),
        model("d", { pending: 200, ratePerS: 50, lastDemandAt: NOW }),
      ],
      [full()],
    );
    expect(actions).toEqual([
      { kind: "load", model: "p", worker: "w1", evict: ["b"], reason: "pinned" },
    ]);
  });

  it("keeps a copy loaded less than minResidencyMs ago (hysteresis)", () => {
    const fresh = worker("w1", [resident("b", 1000), resident("c", 1000), resident("d", 1000)]);
    const models = [model("a", { pending: 10 }), model("b"), model("c"), model("d")];
    expect(plan(models, [fresh], { minResidencyMs: 5000 })).toEqual([]);
    expect(plan(models, [fresh], { minResidencyMs: 500 })[0]).toMatchObject({ kind: "load" });
  });

  it("does not evict a busy model for a barely busier one (margin), but does once it has waited", () => {
    const w = worker("w1", [resident("b")], 100 * MB);
    const busy = { pending: 10, lastDemandAt: NOW };
    const waiting = (waitedMs: number) =>
      model("a", { pending: 11, lastDemandAt: NOW, waitingSince: NOW - waitedMs });
    expect(plan([waiting(0), model("b", busy)], [w], { loadCostMs: 1e9 })).toEqual([]);
    expect(plan([waiting(4000), model("b", busy)], [w], { loadCostMs: 1e9 })).toEqual([
      { kind: "load", model: "a", worker: "w1", evict: ["b"], reason: "demand" },
    ]);
  });

  it("evicts several small copies to fit one large model, on the cheapest worker", () => {
    const small = (n: string) => resident(n, 60_000, 50 * MB);
    const actions = plan(
      [
        model("big", { pending: 20, bytes: 200 * MB }),
        model("s1", { lastDemandAt: NOW - 100_000 }),
        model("s2", { lastDemandAt: NOW - 200_000 }),
        model("s3", { ratePerS: 5, lastDemandAt: NOW }),
        model("s4", { ratePerS: 5, lastDemandAt: NOW }),
      ],
      [
        worker("w1", [small("s1"), small("s2"), resident("x", 60_000, 100 * MB)]),
        worker("w2", [small("s3"), small("s4"), resident("y", 60_000, 100 * MB)]),
      ],
    );
    expect(actions[0]).toMatchObject({ kind: "load", model: "big", worker: "w1" });
    const evicted = actions[0]?.kind === "load" ? [...actions[0].evict].sort() : [];
    // Models the catalog does not know ("x", "y") are never picked by the policy.
    expect(evicted).toEqual(["s1", "s2"]);
  });

  it("reports a model larger than any worker as unplaceable", () => {
    const actions = plan(
      [model("huge", { pending: 1, bytes: 400 * MB })],
      [worker("w1"), worker("w2")],
    );
    expect(actions).toEqual([
      {
        kind: "unplaceable",
        model: "huge",
        message:
          "needs 400000000 bytes; the largest worker can give 300000000 (its memory less headroom and pinned models)",
      },
    ]);
  });

  it("keeps headroom free", () => {
    const w = worker("w1", [resident("b", 60_000, 150 * MB)], 300 * MB);
    const a = model("a", { pending: 1, bytes: 140 * MB });
    expect(
      plan([a, model("b", { lastDemandAt: NOW })], [w], { headroomFraction: 0 }),
    ).toMatchObject([{ kind: "load", evict: [] }]);
    expect(
      plan([a, model("b", { lastDemandAt: NOW - 600_000 })], [w], { headroomFraction: 0.1 }),
    ).toMatchObject([{ kind: "load", evict: ["b"] }]);
    expect(plan([a, model("b")], [w], { headroomBytes: 20 * MB })).toMatchObject([
      { kind: "load", evict: ["b"] },
    ]);
  });
});

describe("planResidency: replicas", () => {
  it("adds a copy of a model whose queue per copy is long", () => {
    const actions = plan(
      [model("a", { pending: 200, ratePerS: 100, lastDemandAt: NOW })],
      [worker("w1", [resident("a")]), worker("w2")],
    );
    expect(actions).toEqual([
      { kind: "load", model: "a", worker: "w2", evict: [], reason: "replicate" },
    ]);
  });

  it("adds as many copies at once as the queue asks for, one per free worker", () => {
    // 200 pending over 64 per copy: 4 copies, 3 more; four workers have room.
    const actions = plan(
      [model("a", { pending: 200, ratePerS: 100, lastDemandAt: NOW })],
      [worker("w1", [resident("a")]), worker("w2"), worker("w3"), worker("w4"), worker("w5")],
    );
    expect(actions).toEqual(
      ["w2", "w3", "w4"].map((w) => ({
        kind: "load",
        model: "a",
        worker: w,
        evict: [],
        reason: "replicate",
      })),
    );
  });

  it("waits for the copies to settle before adding another", () => {
    const actions = plan(
      [model("a", { pending: 500 })],
      [worker("w1", [resident("a", 100)]), worker("w2")],
      { minResidencyMs: 5000 },
    );
    expect(actions).toEqual([]);
  });

  it("drops the newest extra copy of a model idle for idleDropMs", () => {
    const idle = model("a", { lastDemandAt: NOW - 60_000 });
    const actions = plan(
      [idle],
      [worker("w1", [resident("a", 120_000)]), worker("w2", [resident("a", 90_000)])],
    );
    expect(actions).toEqual([{ kind: "unload", model: "a", worker: "w2", reason: "idle-copy" }]);
  });

  it("keeps a pinned model at the copies it asks for, one more per plan, and never drops them", () => {
    const pinned = model("p", { pinned: true, copies: 3 });
    expect(plan([pinned], [worker("w1", [resident("p")]), worker("w2"), worker("w3")])).toEqual([
      { kind: "load", model: "p", worker: "w2", evict: [], reason: "pinned" },
    ]);
    const all = [
      worker("w1", [resident("p")]),
      worker("w2", [resident("p")]),
      worker("w3", [resident("p", 30_000)]),
    ];
    expect(plan([pinned], all)).toEqual([]);
    expect(plan([{ ...pinned, copies: 2 }], all)).toEqual([
      { kind: "unload", model: "p", worker: "w3", reason: "idle-copy" },
    ]);
    // An unpinned model's copies follow its demand, whatever it asks for.
    expect(plan([model("a", { copies: 3 })], [worker("w1"), worker("w2")])).toEqual([]);
  });

  it("keeps the last copy of an idle model and every copy of a model still in use", () => {
    expect(plan([model("a")], [worker("w1", [resident("a")])])).toEqual([]);
    const used = model("a", { ratePerS: 1, lastDemandAt: NOW - 60_000 });
    expect(plan([used], [worker("w1", [resident("a")]), worker("w2", [resident("a")])])).toEqual(
      [],
    );
  });
});

describe("planResidency: invariants over random nodes", () => {
  const arbSnapshot = fc
    .record({
      models: fc.array(
        fc.record({
          pinned: fc.boolean(),
          slots: fc.integer({ min: 1, max: 3 }),
          pending: fc.nat({ max: 300 }),
          ratePerS: fc.double({ min: 0, max: 20, noNaN: true }),
          idleMs: fc.option(fc.nat({ max: 600_000 }), { nil: undefined }),
          waitedMs: fc.option(fc.nat({ max: 60_000 }), { nil: undefined }),
          blocked: fc.boolean(),
        }),
        { minLength: 1, maxLength: 12 },
      ),
      workers: fc.array(
        fc.record({
          slots: fc.integer({ min: 1, max: 6 }),
          holds: fc.array(
            fc.record({
              index: fc.nat(),
              state: fc.constantFrom("loading", "resident", "resident", "evicting"),
              ageMs: fc.nat({ max: 60_000 }),
            }),
            { maxLength: 4 },
          ),
        }),
        { minLength: 1, maxLength: 5 },
      ),
    })
    .map(({ models, workers }): ResidencySnapshot => {
      const ms: ModelDemand[] = models.map((m, i) =>
        model(`m${i}`, {
          pinned: m.pinned,
          bytes: m.slots * 100 * MB,
          pending: m.pending,
          ratePerS: m.ratePerS,
          lastDemandAt: m.idleMs === undefined ? undefined : NOW - m.idleMs,
          waitingSince: m.waitedMs === undefined ? undefined : NOW - m.waitedMs,
          blocked: m.blocked,
        }),
      );
      const ws: WorkerMemory[] = workers.map((w, i) => {
        const replicas: Replica[] = [];
        let used = 0;
        for (const h of w.holds) {
          const m = ms[h.index % ms.length] as ModelDemand;
          if (replicas.some((r) => r.model === m.model) || used + m.bytes > w.slots * 100 * MB)
            continue;
          used += m.bytes;
          replicas.push({ model: m.model, state: h.state, bytes: m.bytes, since: NOW - h.ageMs });
        }
        return worker(`w${i}`, replicas, w.slots * 100 * MB);
      });
      return { nowMs: NOW, models: ms, workers: ws };
    });

  const options = compileResidencyPolicyOptions({ headroomFraction: 0 });

  it("never evicts a pinned or fresh copy, never overfills, one action per idle worker, copies as asked", () => {
    fc.assert(
      fc.property(arbSnapshot, (snapshot) => {
        const actions = planResidency(snapshot, options);
        const pinned = new Set(snapshot.models.filter((m) => m.pinned).map((m) => m.model));
        const bytes = new Map(snapshot.models.map((m) => [m.model, m.bytes]));
        const touched = new Set<string>();
        for (const a of actions) {
          if (a.kind === "unplaceable") continue;
          const w = snapshot.workers.find((x) => x.worker === a.worker) as WorkerMemory;
          expect(w.replicas.every((r) => r.state === "resident")).toBe(true);
          expect(touched.has(a.worker)).toBe(false);
          touched.add(a.worker);
          if (a.kind === "unload") continue;
          expect(w.replicas.some((r) => r.model === a.model)).toBe(false);
          let used = w.replicas.reduce((n, r) => n + r.bytes, 0);
          for (const v of a.evict) {
            expect(pinned.has(v)).toBe(false);
            const r = w.replicas.find((x) => x.model === v) as Replica;
            expect(snapshot.nowMs - r.since).toBeGreaterThanOrEqual(options.minResidencyMs);
            used -= r.bytes;
          }
          expect(used + (bytes.get(a.model) ?? 0)).toBeLessThanOrEqual(w.capacityBytes);
        }
        const loads = actions.filter((a) => a.kind === "load");
        const loadingAlready = snapshot.workers.flatMap((w) =>
          w.replicas.filter((r) => r.state === "loading").map((r) => r.model),
        );
        for (const { model } of loads) expect(loadingAlready).not.toContain(model);
        // Several copies of one model in a round only as replicas its queue asks for.
        for (const m of snapshot.models) {
          const mine = loads.filter((a) => a.model === m.model);
          if (mine.length <= 1) continue;
          expect(mine.every((a) => a.reason === "replicate")).toBe(true);
          // Copies after the round: not those being evicted, nor those this round evicts.
          const held =
            snapshot.workers.filter((w) =>
              w.replicas.some((r) => r.model === m.model && r.state !== "evicting"),
            ).length - loads.filter((a) => a.evict.includes(m.model)).length;
          expect(held + mine.length).toBeLessThanOrEqual(
            Math.ceil(m.pending / options.replicateAbovePending),
          );
        }
      }),
      { numRuns: 500 },
    );
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(arbSnapshot, (snapshot) => {
        expect(planResidency(snapshot, options)).toEqual(planResidency(snapshot, options));
      }),
      { numRuns: 200 },
    );
  });
});

describe("planResidency: spare copies", () => {
  const busy = model("hot", { ratePerS: 20, lastDemandAt: NOW });
  const calm = model("calm", { ratePerS: 2, lastDemandAt: NOW });
  const idle = model("idle");

  it("fills free memory with copies of the busiest models per copy, one each at a time", () => {
    const workers = [
      worker("w1", [resident("hot"), resident("calm"), resident("idle")]),
      worker("w2"),
      worker("w3"),
    ];
    expect(plan([busy, calm, idle], workers)).toEqual([]);
    expect(plan([busy, calm, idle], workers, { spareCopies: 1 })).toEqual([
      { kind: "load", model: "hot", worker: "w2", evict: [], reason: "spare" },
      { kind: "load", model: "calm", worker: "w3", evict: [], reason: "spare" },
    ]);
  });

  it("never evicts for a spare copy and waits for copies to settle", () => {
    const full = [
      worker("w1", [resident("hot")], 100 * MB),
      worker("w2", [resident("calm")], 100 * MB),
    ];
    expect(plan([busy, calm], full, { spareCopies: 1 })).toEqual([]);
    const loading: Replica = { model: "hot", state: "loading", bytes: 100 * MB, since: NOW };
    expect(
      plan([busy], [worker("w1", [resident("hot")]), worker("w2", [loading]), worker("w3")], {
        spareCopies: 1,
      }),
    ).toEqual([]);
  });

  it("with shares, fills only towards a model's share and unloads a copy above it", () => {
    const workers = [
      worker("w1", [resident("hot"), resident("calm")]),
      worker("w2", [resident("calm", 30_000)]),
      worker("w3"),
    ];
    // calm holds 2 copies against a share of 1: its newest goes; hot (share 2) takes w3.
    const shared = [
      model("hot", { ratePerS: 20, lastDemandAt: NOW, shareCopies: 2 }),
      model("calm", { ratePerS: 2, lastDemandAt: NOW, shareCopies: 1 }),
    ];
    expect(plan(shared, workers, { spareCopies: 1 })).toEqual([
      { kind: "unload", model: "calm", worker: "w2", reason: "over-share" },
      { kind: "load", model: "hot", worker: "w3", evict: [], reason: "spare" },
    ]);
    // At its share, hot takes no more even with memory free; the last copy always stays.
    const atShare = [
      model("hot", { ratePerS: 20, lastDemandAt: NOW, shareCopies: 1 }),
      model("calm", { ratePerS: 2, lastDemandAt: NOW, shareCopies: 0 }),
    ];
    expect(
      plan(atShare, [worker("w1", [resident("hot")]), worker("w2", [resident("calm")])], {
        spareCopies: 1,
      }),
    ).toEqual([]);
  });

  it("refuses a spareCopies that is not 0 or 1", () => {
    expect(() => compileResidencyPolicyOptions({ spareCopies: 2 })).toThrow(
      "spareCopies must be 0 or 1",
    );
  });
});
