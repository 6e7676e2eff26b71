import { zipfWeights } from "@shoal/loadgen";
import { describe, expect, it } from "vitest";
import { placeFleet } from "./fleet-placement.js";

const models = (n: number): string[] => Array.from({ length: n }, (_, i) => `sim/m${i}`);

describe("placeFleet", () => {
  it("gives one model per accelerator in proportion to popularity, as the fleet bench did", () => {
    const placed = placeFleet({
      models: models(8),
      weights: zipfWeights(8, 1),
      accelerators: [{ count: 32, speed: 1, memoryBytes: 80e9 }],
      perAccelerator: 1,
      modelMemoryBytes: 1e9,
    });
    expect(placed).toHaveLength(32);
    const copies = (id: string): number => placed.filter((a) => a.models.includes(id)).length;
    expect(models(8).map(copies)).toEqual([10, 5, 4, 3, 3, 3, 2, 2]);
  });

  it("packs several models per accelerator, never two copies of one, load even", () => {
    const ids = models(64);
    const weights = zipfWeights(64, 1);
    const placed = placeFleet({
      models: ids,
      weights,
      accelerators: [{ count: 16, speed: 1, memoryBytes: 80e9 }],
      perAccelerator: 8,
      modelMemoryBytes: 1e9,
    });
    for (const a of placed) {
      expect(a.models.length).toBeLessThanOrEqual(8);
      expect(new Set(a.models).size).toBe(a.models.length);
    }
    // Every model is somewhere, the hottest on most accelerators.
    for (const id of ids) expect(placed.some((a) => a.models.includes(id))).toBe(true);
    expect(placed.filter((a) => a.models.includes("sim/m0")).length).toBeGreaterThan(12);
    const total = weights.reduce((a, b) => a + b, 0);
    const copies = new Map(
      ids.map((id) => [id, placed.filter((a) => a.models.includes(id)).length]),
    );
    const loads = placed.map((a) =>
      a.models.reduce(
        (n, id) => n + (weights[ids.indexOf(id)] as number) / total / (copies.get(id) as number),
        0,
      ),
    );
    expect(Math.max(...loads) / Math.min(...loads)).toBeLessThan(1.3);
  });

  it("gives the most loaded copies to the fastest accelerators", () => {
    const placed = placeFleet({
      models: models(4),
      weights: zipfWeights(4, 1),
      accelerators: [
        { count: 2, speed: 0.5, memoryBytes: 80e9 },
        { count: 2, speed: 2, memoryBytes: 80e9 },
      ],
      perAccelerator: 1,
      modelMemoryBytes: 1e9,
    });
    expect(placed.map((a) => [a.speed, a.models])).toEqual([
      [0.5, ["sim/m2"]],
      [0.5, ["sim/m3"]],
      [2, ["sim/m0"]],
      [2, ["sim/m1"]],
    ]);
  });

  it("refuses what static residency cannot hold", () => {
    const base = {
      models: models(8),
      weights: zipfWeights(8, 1),
      accelerators: [{ count: 4, speed: 1, memoryBytes: 4e9 }],
      modelMemoryBytes: 1e9,
    };
    expect(() => placeFleet({ ...base, perAccelerator: 1 })).toThrow(
      "8 models do not fit in 4 accelerators × 1",
    );
    expect(() => placeFleet({ ...base, perAccelerator: 8 })).toThrow(
      "8 models of 1000000000 bytes do not fit",
    );
  });
});
