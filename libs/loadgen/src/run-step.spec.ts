import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { PlannedRequest } from "./plan.js";
import { runStep, type RunStepOptions } from "./run-step.js";
import type { StepResult } from "./step-result.js";

function plan(times: readonly number[]): PlannedRequest[] {
  return times.map((atMs) => ({
    atMs,
    function: "embed",
    model: "m",
    inputTokens: [10],
    stream: false,
  }));
}

// A fake clock (timers and `performance.now`, which runStep reads by default) makes every send
// time and latency exact, so the assertions hold on a busy machine as on an idle one.
beforeEach(() => {
  vi.useFakeTimers({
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"],
  });
});

afterEach(() => {
  vi.useRealTimers();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs the step to completion on the fake clock. */
async function run(options: RunStepOptions): Promise<StepResult> {
  const result = runStep(options);
  await vi.runAllTimersAsync();
  return result;
}

describe("runStep", () => {
  it("sends open-loop: a slow answer does not delay the next send", async () => {
    const sentAt: number[] = [];
    const t0 = performance.now();
    const result = await run({
      offeredRps: 20,
      plan: plan([0, 50, 100, 150]),
      seconds: 0.2,
      warmupSeconds: 0,
      drainMs: 2000,
      send: async () => {
        sentAt.push(performance.now() - t0);
        await sleep(300);
        return { tokens: 10 };
      },
    });
    // Every request went out on time although none had been answered yet.
    expect(sentAt).toEqual([0, 50, 100, 150]);
    expect(result.sent).toBe(4);
    expect(result.failed).toBe(0);
    // All answers came after the window ended: no achieved throughput, latency the answer time.
    expect(result.achievedRps).toBe(0);
    expect(result.latencyMs).toEqual({ p50: 300, p90: 300, p99: 300 });
  });

  it("reports percentiles of the phases answers report, over measured requests only", async () => {
    let n = 0;
    const result = await run({
      offeredRps: 100,
      plan: plan([0, 10, 60, 70, 80]),
      seconds: 0.2,
      warmupSeconds: 0.05,
      drainMs: 1000,
      send: () => {
        n++;
        // The first two fall in the warm-up; the measured three queue 10, 20 and 30 ms.
        return Promise.resolve({ tokens: 1, phasesMs: { queue: n > 2 ? (n - 2) * 10 : 999 } });
      },
    });
    expect(result.phasesMs).toEqual({ queue: { p50: 20, p90: 30, p99: 30 } });
  });

  it("reports the p99 of the requests sent in each second of the step", async () => {
    const result = await run({
      offeredRps: 2,
      // Second 0 is warm-up; second 1 answers in 100 ms, second 2 sends nothing, 3 in 700.
      plan: plan([0, 1000, 1500, 3000, 3200]),
      seconds: 4,
      warmupSeconds: 1,
      drainMs: 1000,
      send: async (request) => {
        await sleep(request.atMs >= 3000 ? 700 : 100);
        return { tokens: 1 };
      },
    });
    expect(result.p99BySecondMs).toEqual([null, 100, null, 700]);
  });

  it("reports no phases when answers carry none", async () => {
    const result = await run({
      offeredRps: 10,
      plan: plan([0]),
      seconds: 0.05,
      warmupSeconds: 0,
      drainMs: 100,
      send: () => Promise.resolve({ tokens: 1 }),
    });
    expect(result.phasesMs).toBeUndefined();
  });

  it("counts answers, tokens and the load sent within the window, and failures", async () => {
    let n = 0;
    const result = await run({
      offeredRps: 40,
      plan: plan([0, 25, 50, 75, 100, 125, 150, 175]),
      seconds: 0.5,
      warmupSeconds: 0,
      drainMs: 1000,
      send: async () => {
        n++;
        await sleep(5);
        if (n % 4 === 0) throw new Error("boom");
        return { tokens: 10 };
      },
    });
    expect(result.sent).toBe(8);
    expect(result.sentRps).toBeCloseTo(8 / 0.5, 6);
    expect(result.failed).toBe(2);
    expect(result.achievedRps).toBeCloseTo(6 / 0.5, 6);
    expect(result.achievedTokensPerS).toBeCloseTo(60 / 0.5, 6);
  });

  it("leaves requests sent during the warm-up out of the measurement", async () => {
    const result = await run({
      offeredRps: 10,
      plan: plan([0, 10, 150, 160]),
      seconds: 0.3,
      warmupSeconds: 0.1,
      drainMs: 1000,
      send: async (r) => {
        await sleep(r.atMs < 100 ? 120 : 5);
        return { tokens: 1 };
      },
    });
    expect(result.sent).toBe(2);
    expect(result.latencyMs.p99).toBe(5);
  });

  it("aborts what is still unanswered after the drain time and fails it", async () => {
    let abortedAt: number | undefined;
    const t0 = performance.now();
    const result = await run({
      offeredRps: 10,
      plan: plan([0]),
      seconds: 0.05,
      warmupSeconds: 0,
      drainMs: 50,
      send: (_, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            abortedAt = performance.now() - t0;
            reject(signal.reason as Error);
          });
        }),
    });
    // The step's 50 ms, then the 50 ms drain: not before.
    expect(abortedAt).toBe(100);
    expect(result.failed).toBe(1);
    expect(result.latencyMs.p99).toBeNaN();
  });
});
