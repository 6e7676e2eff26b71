import { describe, expect, it } from "vitest";
import { WorkerRegistry } from "./worker-registry.js";

const hb = (models: { model: string; state?: "loading" | "resident"; memoryBytes?: number }[]) => ({
  worker: "w1",
  node: "n",
  capacityBytes: 1000,
  models: models.map((m) => ({
    model: m.model,
    state: m.state ?? "resident",
    memoryBytes: m.memoryBytes ?? 100,
    items: 5,
  })),
});

describe("WorkerRegistry", () => {
  it("adopts what an unknown worker already holds, with the sidecar's sizes", () => {
    const r = new WorkerRegistry(3000, 2000);
    const change = r.heartbeat(
      hb([
        { model: "a", memoryBytes: 123 },
        { model: "b", state: "loading" },
      ]),
      0,
      0,
    );
    expect(change.upserted).toEqual([{ worker: "w1", model: "a" }]);
    expect(r.memory()).toEqual([
      {
        worker: "w1",
        capacityBytes: 1000,
        replicas: [{ model: "a", state: "resident", bytes: 123, since: 0 }],
      },
    ]);
    expect(r.itemsByModel()).toEqual(new Map([["a", 5]]));
  });

  it("trusts its own record over heartbeats while an action is under way or just finished", () => {
    const r = new WorkerRegistry(3000, 2000);
    r.heartbeat(hb([]), 0, 0);
    const w = r.get("w1");
    if (w === undefined) throw new Error("no worker");
    w.replicas.set("a", { state: "resident", bytes: 100, since: 10, sinceUnixMs: 10, items: 0 });
    w.settledAt = 100;
    // A heartbeat sent before the load finished does not undo it…
    expect(r.heartbeat(hb([]), 1000, 1000).removed).toEqual([]);
    // …but once settled, a copy the worker no longer reports (sidecar crash) is dropped.
    expect(r.heartbeat(hb([]), 2500, 2500).removed).toEqual([{ worker: "w1", model: "a" }]);
  });

  it("forgets a silent worker and its copies", () => {
    const r = new WorkerRegistry(3000, 2000);
    r.heartbeat(hb([{ model: "a" }]), 0, 0);
    expect(r.expire(2999).removed).toEqual([]);
    expect(r.expire(3000).removed).toEqual([{ worker: "w1", model: "a" }]);
    expect(r.all()).toEqual([]);
  });
});
