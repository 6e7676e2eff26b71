import { describe, expect, it } from "vitest";
import { beats, tune, type TuningScore } from "./tune.js";

/** A made-up cluster whose knee peaks at target 500 ms and prefers fill wait 0. */
function cluster(config: Readonly<Record<string, unknown>>): TuningScore {
  const target = config["batchTargetMs"] as number;
  const fill = config["maxFillWaitMs"] as number;
  return { kneeRps: 100 - Math.abs(target - 500) / 10 - fill * 5, p99Ms: target * 2 };
}

describe("tune", () => {
  it("finds each parameter's best value with the others held at the best so far", async () => {
    const seen: Record<string, unknown>[] = [];
    const outcome = await tune(
      [
        { name: "batchTargetMs", candidates: [250, 100, 500, 1000] },
        { name: "maxFillWaitMs", candidates: [2, 0, 10] },
      ],
      (config) => {
        seen.push(config);
        return Promise.resolve(cluster(config));
      },
    );
    expect(outcome.best).toEqual({ batchTargetMs: 500, maxFillWaitMs: 0 });
    expect(outcome.defaultScore.kneeRps).toBe(100 - 25 - 10);
    expect(outcome.bestScore.kneeRps).toBe(100);
    // The defaults, then 3 targets, then 2 fill waits tried with the best target; each
    // candidate that beat the best was measured twice.
    expect(seen).toEqual([
      { batchTargetMs: 250, maxFillWaitMs: 2 },
      { batchTargetMs: 100, maxFillWaitMs: 2 },
      { batchTargetMs: 500, maxFillWaitMs: 2 },
      { batchTargetMs: 500, maxFillWaitMs: 2 },
      { batchTargetMs: 1000, maxFillWaitMs: 2 },
      { batchTargetMs: 500, maxFillWaitMs: 0 },
      { batchTargetMs: 500, maxFillWaitMs: 0 },
      { batchTargetMs: 500, maxFillWaitMs: 10 },
    ]);
    expect(outcome.trials.map((t) => [t.adopted, t.confirmation ?? false])).toEqual([
      [true, false],
      [false, false],
      [false, false],
      [true, true],
      [false, false],
      [false, false],
      [true, true],
      [false, false],
    ]);
  });

  it("does not adopt a candidate whose better knee does not repeat", async () => {
    let luckyRun = true;
    const outcome = await tune([{ name: "x", candidates: [1, 2] }], (config) => {
      if (config["x"] === 1) return Promise.resolve({ kneeRps: 100, p99Ms: 500 });
      const kneeRps = luckyRun ? 130 : 100;
      luckyRun = false;
      return Promise.resolve({ kneeRps, p99Ms: 500 });
    });
    expect(outcome.best).toEqual({ x: 1 });
    expect(outcome.trials).toHaveLength(3);
  });

  it("keeps the lower of the two scores of a confirmed candidate, or one without confirm", async () => {
    const knees = [100, 140, 120];
    const measure = () => Promise.resolve({ kneeRps: knees.shift() ?? 0, p99Ms: 1 });
    const confirmed = await tune([{ name: "x", candidates: [1, 2] }], measure);
    expect(confirmed.bestScore.kneeRps).toBe(120);
    knees.push(100, 140);
    const single = await tune([{ name: "x", candidates: [1, 2] }], measure, { confirm: false });
    expect(single.best).toEqual({ x: 2 });
    expect(single.bestScore.kneeRps).toBe(140);
  });

  it("passes the best score so far to each measurement", async () => {
    const bests: (number | undefined)[] = [];
    await tune([{ name: "x", candidates: [1, 2, 3] }], (config, best) => {
      bests.push(best?.kneeRps);
      return Promise.resolve({ kneeRps: (config["x"] as number) * 10, p99Ms: 1 });
    });
    // 2 beat 1 and was confirmed (measured twice against 10); 3 was measured against 20.
    expect(bests).toEqual([undefined, 10, 10, 20, 20]);
  });

  it("keeps the defaults when nothing beats them by more than the noise margin", async () => {
    const outcome = await tune([{ name: "x", candidates: [1, 2] }], (config) =>
      Promise.resolve({ kneeRps: config["x"] === 1 ? 100 : 104, p99Ms: 500 }),
    );
    expect(outcome.best).toEqual({ x: 1 });
  });

  it("refuses a parameter without candidates or listed twice", async () => {
    const measure = () => Promise.resolve({ kneeRps: 1, p99Ms: 1 });
    await expect(tune([{ name: "x", candidates: [] }], measure)).rejects.toThrow(/no candidates/);
    await expect(
      tune(
        [
          { name: "x", candidates: [1] },
          { name: "x", candidates: [2] },
        ],
        measure,
      ),
    ).rejects.toThrow(/listed twice/);
  });
});

describe("beats", () => {
  const best = { kneeRps: 100, p99Ms: 800 };
  it.each<[string, TuningScore, boolean]>([
    ["a knee more than 5 % higher", { kneeRps: 106, p99Ms: 900 }, true],
    ["a knee within noise and no better p99", { kneeRps: 104, p99Ms: 790 }, false],
    ["the same knee with a p99 over 5 % lower", { kneeRps: 100, p99Ms: 700 }, true],
    ["a lower knee, however fast", { kneeRps: 97, p99Ms: 100 }, false],
    ["no knee at all", { kneeRps: 0, p99Ms: null }, false],
  ])("%s: %s", (_what, candidate, expected) => {
    expect(beats(candidate, best)).toBe(expected);
  });
});
