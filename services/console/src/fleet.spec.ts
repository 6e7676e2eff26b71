import { compileCatalog } from "@shoal/config";
import type { Heartbeat } from "@shoal/residency";
import { describe, expect, it } from "vitest";
import { FleetState } from "./fleet.js";

const catalog = compileCatalog(
  {
    models: [
      {
        id: "org/a",
        key: "a",
        family: "embedding",
        dimensions: 4,
        maxInputTokens: 8,
        pinned: true,
        source: { kind: "dir", path: "/m/a" },
      },
      {
        id: "org/b",
        key: "b",
        family: "embedding",
        dimensions: 4,
        maxInputTokens: 8,
        source: { kind: "dir", path: "/m/b" },
      },
    ],
  },
  { modelsDir: "/m" },
);

function beat(items: number, batches: number, busyUs: number, putBacks = 0): Heartbeat {
  return {
    worker: "w1",
    node: "n1",
    capacityBytes: 1000,
    models: [{ model: "a", state: "resident", memoryBytes: 300, items, batches, busyUs, putBacks }],
  };
}

describe("FleetState", () => {
  it("derives busy fraction, batch size and completions from two heartbeats", () => {
    const fleet = new FleetState(catalog, (c) => c / 10);
    fleet.heartbeat(beat(100, 10, 1_000_000), 10_000);
    fleet.heartbeat(beat(160, 13, 1_500_000, 4), 12_000);
    const [node] = fleet.nodes(12_000);
    const worker = node?.workers[0];
    expect(worker).toMatchObject({
      worker: "w1",
      capacityBytes: 1000,
      headroomBytes: 100,
      usedBytes: 300,
      stale: false,
      busyFraction: 0.25,
      batchSize: 20,
    });
    expect(worker?.copies[0]).toMatchObject({ id: "org/a", pinned: true, state: "resident" });
    expect(fleet.completionsPerS("a")).toBe(30);
    expect(fleet.putBacks("a")).toBe(4);
  });

  it("gives no rate across a reload (counters restarted), and marks then forgets a silent worker", () => {
    const fleet = new FleetState(catalog, (c) => c / 10);
    fleet.heartbeat(beat(100, 10, 1_000_000), 0);
    fleet.heartbeat(beat(5, 1, 10_000), 1_000);
    expect(fleet.completionsPerS("a")).toBe(0);
    expect(fleet.nodes(7_000)[0]?.workers[0]?.stale).toBe(true);
    fleet.expire(62_000);
    expect(fleet.nodes(62_000)).toEqual([]);
  });

  it("turns replica records into loading, resident and gone events with durations", () => {
    const fleet = new FleetState(catalog, (c) => c / 10);
    const record = { model: "b", worker: "w1", node: "n1", memoryBytes: 200 };
    fleet.replica({ ...record, state: "loading", sinceUnixMs: 1_000 }, 1_000);
    fleet.heartbeat({ ...beat(0, 0, 0), models: [] }, 1_100);
    // The loader's record shows the copy loading before the worker's heartbeat does.
    expect(fleet.nodes(1_100)[0]?.workers[0]?.copies).toMatchObject([
      { model: "b", id: "org/b", state: "loading", memoryBytes: 200, pinned: false },
    ]);
    fleet.replica({ ...record, state: "resident", sinceUnixMs: 3_500 }, 3_500);
    fleet.replica({ ...record, state: "resident", sinceUnixMs: 3_500 }, 3_600);
    fleet.replicaGone("b", "w1", 10_000);
    fleet.replicaGone("b", "w1", 10_001);
    expect(fleet.events().map((e) => [e.kind, e.durationMs])).toEqual([
      ["gone", 6_500],
      ["resident", 2_500],
      ["loading", undefined],
    ]);
    expect(fleet.copiesOf("b")).toEqual([]);
  });
});
