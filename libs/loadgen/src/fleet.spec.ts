import { describe, expect, it } from "vitest";
import { compileFleet } from "./fleet.js";
import { WorkloadError } from "./workload-error.js";

describe("compileFleet", () => {
  it("leaves out what is not given, for the bench's defaults", () => {
    expect(compileFleet({}, "f")).toEqual({ modelsPerAccelerator: 1, residency: "static" });
  });

  it("reads accelerator classes, sharing, cost and memory", () => {
    expect(
      compileFleet(
        {
          accelerators: [{ count: 8, speed: 2, memory_gb: 24 }, { count: 24 }],
          models_per_accelerator: 4,
          batch_cost: { fixed_us: 200_000, per_padded_token_ns: 500_000 },
          model_memory_gb: 2,
          residency: "dynamic",
          model_load_ms: 2000,
        },
        "f",
      ),
    ).toEqual({
      accelerators: [
        { count: 8, speed: 2, memoryBytes: 24e9 },
        { count: 24, speed: 1, memoryBytes: 80e9 },
      ],
      modelsPerAccelerator: 4,
      batchCost: { fixedUs: 200_000, perPaddedTokenNs: 500_000 },
      modelMemoryBytes: 2e9,
      residency: "dynamic",
      modelLoadMs: 2000,
    });
  });

  it.each([
    [{ accelerators: [] }, "f.accelerators must be a non-empty list"],
    [{ accelerators: [{ count: 0 }] }, "f.accelerators[0].count must be a number in 1..=256"],
    [{ accelerators: [{ count: 2.5 }] }, "f.accelerators[0].count must be an integer"],
    [{ accelerators: [{ count: 200 }, { count: 100 }] }, "300 in all, at most 256"],
    [{ accelerators: [{ count: 1, speed: 0 }] }, "f.accelerators[0].speed must be a number"],
    [{ accelerators: [{ count: 1, gpus: 1 }] }, "f.accelerators[0]: unknown key gpus"],
    [{ models_per_accelerator: 0 }, "f.models_per_accelerator must be a number in 1..=64"],
    [{ batch_cost: { fixed_us: 1 } }, "f.batch_cost.per_padded_token_ns must be a number"],
    [{ model_memory_gb: -1 }, "f.model_memory_gb must be a number"],
    [{ residency: "sticky" }, 'f.residency must be static or dynamic, got "sticky"'],
    [{ model_load_ms: -5 }, "f.model_load_ms must be a number in 0..=600000"],
  ])("refuses %j", (raw, message) => {
    expect(() => compileFleet(raw, "f")).toThrow(WorkloadError);
    expect(() => compileFleet(raw, "f")).toThrow(message);
  });
});
