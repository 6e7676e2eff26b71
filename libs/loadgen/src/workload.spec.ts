import { describe, expect, it } from "vitest";
import { planStep } from "./plan.js";
import { compileWorkload } from "./workload.js";
import { WorkloadError } from "./workload-error.js";

const base = {
  name: "fleet",
  seed: 9,
  slo: { p99_ms: 500 },
  load: { rates: [10, 20], step_seconds: 2 },
  mix: [{ function: "embed", models: ["a", "b"], input_tokens: { uniform: [8, 64] } }],
};

describe("compileWorkload", () => {
  it("fills defaults and keeps what is given", () => {
    const w = compileWorkload(base);
    expect(w.name).toBe("fleet");
    expect(w.sloP99Ms).toBe(500);
    expect(w.load).toEqual({ rates: [10, 20], stepSeconds: 2, warmupSeconds: 0 });
    expect(w.mix[0]).toMatchObject({ function: "embed", share: 1, stream: false });
    expect(w.mix[0]?.inputs).toEqual({ kind: "constant", value: 1 });
  });

  it("expands a ramp", () => {
    const w = compileWorkload({ ...base, load: { ramp: { from: 50, to: 200, step: 50 } } });
    expect(w.load.rates).toEqual([50, 100, 150, 200]);
  });

  it.each([
    [{ ...base, extra: 1 }, "workload: unknown key extra"],
    [{ ...base, name: "Fleet!" }, "workload.name must match"],
    [{ ...base, seed: -1 }, "workload.seed must be an integer"],
    [{ ...base, slo: {} }, "workload.slo.p99_ms must be a number"],
    [{ ...base, load: { rates: [] } }, "workload.load.rates must not be empty"],
    [{ ...base, load: { rates: [20, 10] } }, "workload.load.rates must be ascending"],
    [{ ...base, load: { rates: [1], ramp: { from: 1, to: 2, step: 1 } } }, "not both"],
    [{ ...base, load: { step_seconds: 3 } }, "must have rates (a list) or ramp"],
    [{ ...base, load: { ramp: { from: 1, to: 1e6, step: 1 } } }, "over 1000 steps"],
    [{ ...base, mix: [] }, "workload.mix must be a non-empty list"],
    [
      { ...base, mix: [{ function: "rerank", models: ["a"] }] },
      "function must be embed or generate",
    ],
    [{ ...base, mix: [{ function: "embed", models: [] }] }, "models must be a non-empty list"],
    [{ ...base, mix: [{ function: "embed", models: ["a"], stream: true }] }, "for generate only"],
    [
      { ...base, mix: [{ function: "generate", models: ["a"], inputs: 2 }] },
      "inputs is for embed only",
    ],
    [
      { ...base, mix: [{ function: "embed", models: ["a"], popularity: { pareto: 1 } }] },
      "unknown key pareto",
    ],
    [{ ...base, mix: [{ function: "embed", models: ["a"], share: 0 }] }, "share must be a number"],
    // Each message names the value's place in the file and what it was.
    [
      { ...base, load: { rates: [10, "fast"] } },
      'workload.load.rates[1] must be a number in 0.01..=1000000, got "fast"',
    ],
    [
      { ...base, load: { ramp: { from: 50, to: 10, step: 5 } } },
      "workload.load.ramp.to must be a number in 50..=1000000, got 10",
    ],
    [
      { ...base, load: { rates: [1], warmup_seconds: -1 } },
      "workload.load.warmup_seconds must be a number in 0..=3600, got -1",
    ],
    [{ ...base, mix: ["embed"] }, "workload.mix[0] must be an object"],
    [
      { ...base, mix: [{ function: "embed", models: ["a", ""] }] },
      "workload.mix[0].models must be a non-empty list of model ids",
    ],
    [
      { ...base, mix: [{ function: "generate", models: ["a"], stream: "yes" }] },
      "workload.mix[0].stream must be a boolean",
    ],
    [
      {
        ...base,
        mix: [...base.mix, { function: "embed", models: ["c"], input_tokens: { uniform: [9, 3] } }],
      },
      "workload.mix[1].input_tokens.uniform: low 9 is above high 3",
    ],
    [[], "workload must be an object"],
    [{ ...base, mix: [{ function: "embed", models: ["a", "a"] }] }, "lists a model twice"],
    [
      { ...base, mix: [{ function: "embed", models: { prefix: "m", count: 0 } }] },
      "workload.mix[0].models.count must be a number in 1..=4096, got 0",
    ],
    [
      { ...base, mix: [{ function: "embed", models: { prefix: "", count: 3 } }] },
      "workload.mix[0].models.prefix must be a non-empty string",
    ],
    [
      { ...base, mix: [{ function: "embed", models: ["a"], arrivals: { gamma: { cv: 50 } } }] },
      "workload.mix[0].arrivals.gamma.cv must be a number in 0.1..=20, got 50",
    ],
    [{ ...base, fleet: { models_per_accelerator: 0.5 } }, "workload.fleet.models_per_accelerator"],
  ])("refuses %j", (raw, message) => {
    expect(() => compileWorkload(raw)).toThrow(WorkloadError);
    expect(() => compileWorkload(raw)).toThrow(message);
  });
});

describe("planStep", () => {
  const workload = compileWorkload({
    ...base,
    mix: [
      {
        function: "embed",
        share: 3,
        models: ["m0", "m1", "m2", "m3"],
        popularity: { zipf: 1 },
        input_tokens: { lognormal: { median: 32, sigma: 0.5 }, max: 256 },
        inputs: { uniform: [1, 4] },
      },
      { function: "generate", share: 1, models: ["g"], output_tokens: 8, stream: true },
    ],
  });

  it("is the same for the same step and differs between steps", () => {
    expect(planStep(workload, 0, 50, 2)).toEqual(planStep(workload, 0, 50, 2));
    expect(planStep(workload, 1, 50, 2)).not.toEqual(planStep(workload, 0, 50, 2));
  });

  it("arrives at the offered rate, in order, within the step", () => {
    const plan = planStep(workload, 0, 200, 20);
    expect(Math.abs(plan.length / 20 - 200)).toBeLessThan(10);
    const times = plan.map((p) => p.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.max(...times)).toBeLessThan(20_000);
  });

  it("follows the mix's shares and the models' Zipf popularity", () => {
    const plan = planStep(workload, 2, 500, 20);
    const gen = plan.filter((p) => p.function === "generate");
    expect(gen.length / plan.length).toBeCloseTo(0.25, 1);
    expect(gen.every((p) => p.stream && p.maxTokens === 8 && p.inputTokens.length === 1)).toBe(
      true,
    );
    const count = (m: string): number => plan.filter((p) => p.model === m).length;
    // Zipf with s = 1 over four ranks: 1 : 1/2 : 1/3 : 1/4.
    expect(count("m0") / count("m1")).toBeCloseTo(2, 0);
    expect(count("m0") / count("m3")).toBeCloseTo(4, 0);
    const embeds = plan.filter((p) => p.function === "embed");
    expect(new Set(embeds.map((p) => p.inputTokens.length))).toEqual(new Set([1, 2, 3, 4]));
  });

  it("generates many models from a prefix", () => {
    const w = compileWorkload({
      ...base,
      mix: [{ function: "embed", models: { prefix: "sim/m", count: 64 } }],
    });
    expect(w.mix[0]?.models).toHaveLength(64);
    expect(w.mix[0]?.models.at(-1)).toBe("sim/m63");
  });

  it("keeps each model's own stream bursty and its share of the rate", () => {
    const bursty = compileWorkload({
      ...base,
      mix: [
        { function: "embed", models: { prefix: "m", count: 4 }, arrivals: { gamma: { cv: 4 } } },
      ],
    });
    const plan = planStep(bursty, 0, 200, 60);
    expect(plan.length / 60).toBeGreaterThan(150);
    expect(plan.length / 60).toBeLessThan(250);
    // Arrivals of one model per second vary far more than Poisson's (variance = mean).
    const perSecond = new Array<number>(60).fill(0);
    for (const p of plan.filter((r) => r.model === "m0")) {
      const second = Math.floor(p.atMs / 1000);
      perSecond[second] = (perSecond[second] ?? 0) + 1;
    }
    const mean = perSecond.reduce((a, b) => a + b, 0) / 60;
    const variance = perSecond.reduce((a, c) => a + (c - mean) ** 2, 0) / 60;
    expect(variance / mean).toBeGreaterThan(4);
    expect(plan.map((p) => p.atMs)).toEqual(plan.map((p) => p.atMs).sort((a, b) => a - b));
  });

  it("moves the hot model from step to step as popularity drifts", () => {
    const drifting = compileWorkload({
      ...base,
      mix: [
        {
          function: "embed",
          models: ["m0", "m1", "m2", "m3"],
          popularity: { zipf: 2, drift: { every_seconds: 10, rotate: 1 } },
        },
      ],
    });
    const hottest = (step: number): string => {
      const counts = new Map<string, number>();
      for (const p of planStep(drifting, step, 100, 10))
        counts.set(p.model, (counts.get(p.model) ?? 0) + 1);
      return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "";
    };
    expect([0, 1, 2, 3, 4].map(hottest)).toEqual(["m0", "m1", "m2", "m3", "m0"]);
  });
});
