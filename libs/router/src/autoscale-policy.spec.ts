import { describe, expect, it } from "vitest";
import {
  planAutoscale,
  Recommendations,
  type AutoscaleModel,
  type AutoscaleWorker,
} from "./autoscale-policy.js";

const GB = 1e9;
const options = { targetLagPerReplica: 10, scaleDownWindowMs: 10_000 };

function worker(name: string, usedGb = 0, capacityGb = 10, busy = false): AutoscaleWorker {
  return { worker: name, capacityBytes: capacityGb * GB, usedBytes: usedGb * GB, busy };
}

function model(
  name: string,
  replicas: [string, "loading" | "ready" | "draining", number][],
  held = 0,
): AutoscaleModel {
  return {
    model: name,
    bytes: 2 * GB,
    held,
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
