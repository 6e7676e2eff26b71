import { describe, expect, it } from "vitest";
import { Recommendations } from "@shoal/residency";
import { planAutoscale, type AutoscaleModel, type AutoscaleWorker } from "./autoscale-policy.js";

const GB = 1e9;
const options = { targetLagPerReplica: 10, scaleDownWindowMs: 10_000 };

function worker(name: string, usedGb = 0, capacityGb = 10, busy = false): AutoscaleWorker {
  return { worker: name, capacityBytes: capacityGb * GB, usedBytes: usedGb * GB, busy };
}

function model(
  name: string,
  replicas: [string, "loading" | "ready" | "draining", number][],
  held = 0,
  rate = 0,
): AutoscaleModel {
  return {
    model: name,
    bytes: 2 * GB,
    held,
    rate,
    replicas: replicas.map(([w, phase, lag]) => ({ worker: w, phase, lag })),
  };
}

describe("planAutoscale", () => {
  it("scales up to ceil(lag / target) at once, onto the accelerators with most free memory", () => {
    const actions = planAutoscale(
      [model("a", [["w1", "ready", 35]])],
      [worker("w1", 2), worker("w2", 6), worker("w3", 0), worker("w4", 4)],
      new Recommendations(),
      0,
      options,
    );
    expect(actions).toEqual([
      { kind: "scale-up", model: "a", worker: "w3" },
      { kind: "scale-up", model: "a", worker: "w4" },
      { kind: "scale-up", model: "a", worker: "w2" },
    ]);
  });

  it("activates a model with held work and no replica, and keeps the minimum", () => {
    const actions = planAutoscale(
      [model("cold", [], 3), model("idle", [])],
      [worker("w1"), worker("w2")],
      new Recommendations(),
      0,
      { ...options, minReplicas: 0 },
    );
    expect(actions).toEqual([{ kind: "scale-up", model: "cold", worker: "w1" }]);
    const kept = planAutoscale(
      [model("idle", [])],
      [worker("w1")],
      new Recommendations(),
      0,
      options,
    );
    expect(kept).toEqual([{ kind: "scale-up", model: "idle", worker: "w1" }]);
  });

  it("waits, as a pending pod does, when no accelerator has room or all are busy", () => {
    expect(
      planAutoscale(
        [model("a", [["w1", "ready", 50]])],
        [worker("w1", 9.5), worker("w2", 8), worker("w3", 0, 10, true)],
        new Recommendations(),
        0,
        options,
      ),
    ).toEqual([]);
  });

  it("scales down only after the window, draining the emptiest replica, then unloads it", () => {
    const recs = new Recommendations();
    const workers = [worker("w1", 2), worker("w2", 2), worker("w3", 2)];
    const busy = model("a", [
      ["w1", "ready", 12],
      ["w2", "ready", 9],
      ["w3", "ready", 9],
    ]);
    expect(planAutoscale([busy], workers, recs, 0, options)).toEqual([]);
    const quiet = model("a", [
      ["w1", "ready", 3],
      ["w2", "ready", 1],
      ["w3", "ready", 2],
    ]);
    // Within the window the 3 replicas recommended at t=0 still hold.
    expect(planAutoscale([quiet], workers, recs, 5_000, options)).toEqual([]);
    expect(planAutoscale([quiet], workers, recs, 10_500, options)).toEqual([
      { kind: "drain", model: "a", worker: "w2" },
      { kind: "drain", model: "a", worker: "w3" },
    ]);
    const drained = model("a", [
      ["w1", "ready", 0],
      ["w2", "draining", 0],
      ["w3", "draining", 1],
    ]);
    expect(planAutoscale([drained], workers, recs, 11_000, options)).toEqual([
      { kind: "unload", model: "a", worker: "w2" },
    ]);
  });

  it("drains nothing while a replica of the model is loading", () => {
    const loading = model("a", [
      ["w1", "ready", 0],
      ["w2", "loading", 0],
    ]);
    expect(
      planAutoscale(
        [loading],
        [worker("w1", 2), worker("w2", 2)],
        new Recommendations(),
        0,
        options,
      ),
    ).toEqual([]);
  });
});

describe("planAutoscale with fillMemory", () => {
  const fill = { ...options, fillMemory: true, headroomFraction: 0 };

  it("shares the memory the minimum leaves by arrival rate, at most one replica per accelerator", () => {
    // 8 × 4 GB, 2 GB models, one replica each: 26 GB spare = 13 replicas, 3 : 2 : 0.
    // a: 7.8 → 7 more (capped at one per accelerator); b: 5.2 → 5 more.
    const workers = ["w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"].map((w, i) =>
      worker(w, i < 3 ? 2 : 0, 4),
    );
    const models = [
      model("a", [["w1", "ready", 0]], 0, 3),
      model("b", [["w2", "ready", 0]], 0, 2),
      model("c", [["w3", "ready", 0]], 0, 0),
    ];
    // One load per accelerator a round: a takes seven, b the one left.
    expect(planAutoscale(models, workers, new Recommendations(), 0, fill)).toEqual([
      ...["w4", "w5", "w6", "w7", "w8", "w2", "w3"].map((w) => ({
        kind: "scale-up",
        model: "a",
        worker: w,
      })),
      { kind: "scale-up", model: "b", worker: "w1" },
    ]);
    // Without fillMemory nothing has lag, so nothing moves.
    expect(planAutoscale(models, workers, new Recommendations(), 0, options)).toEqual([]);
  });

  it("gives a cooled model's replicas back after the window, to the model that warmed", () => {
    const recs = new Recommendations();
    // Full: w1 holds a and b, w2–w4 a copy of a each.
    const workers = ["w1", "w2", "w3", "w4"].map((w) =>
      w === "w1" ? worker(w, 4, 4) : worker(w, 2, 2),
    );
    const replicas = (...ws: string[]): [string, "ready", number][] =>
      ws.map((w) => [w, "ready", 0]);
    const hot = [model("a", replicas("w1", "w2", "w3", "w4"), 0, 10), model("b", replicas("w1"))];
    expect(planAutoscale(hot, workers, recs, 0, fill)).toEqual([]);
    const moved = [
      model("a", replicas("w1", "w2", "w3", "w4"), 0, 0),
      model("b", replicas("w1"), 0, 10),
    ];
    // b's share is 3 more replicas, but the memory is a's until its window passes.
    expect(planAutoscale(moved, workers, recs, 5_000, fill)).toEqual([]);
    expect(planAutoscale(moved, workers, recs, 10_500, fill)).toEqual([
      { kind: "drain", model: "a", worker: "w1" },
      { kind: "drain", model: "a", worker: "w2" },
      { kind: "drain", model: "a", worker: "w3" },
    ]);
  });
});
