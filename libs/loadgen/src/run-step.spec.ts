import { describe, expect, it } from "vitest";
import type { PlannedRequest } from "./plan.js";
import { runStep } from "./run-step.js";

function plan(times: readonly number[]): PlannedRequest[] {
  return times.map((atMs) => ({
    atMs,
    function: "embed",
    model: "m",
    inputTokens: [10],
    stream: false,
  }));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("runStep", () => {
  it("sends open-loop: a slow answer does not delay the next send", async () => {
    const sentAt: number[] = [];
    const t0 = performance.now();
    const result = await runStep({
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
    expect(sentAt).toHaveLength(4);
    sentAt.forEach((at, i) => {
      expect(at).toBeGreaterThanOrEqual(i * 50 - 1);
      expect(at).toBeLessThan(i * 50 + 40);
    });
    expect(result.sent).toBe(4);
    expect(result.failed).toBe(0);
    // All answers came after the window ended: no achieved throughput, latency ≈ 300 ms.
    expect(result.achievedRps).toBe(0);
    expect(result.latencyMs.p50).toBeGreaterThanOrEqual(299);
  });

  it("reports percentiles of the phases answers report, over measured requests only", async () => {
    let n = 0;
    const result = await runStep({
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

  it("reports no phases when answers carry none", async () => {
    const result = await runStep({
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
    const result = await runStep({
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
    const result = await runStep({
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
    expect(result.latencyMs.p99).toBeLessThan(100);
  });

  it("aborts what is still unanswered after the drain time and fails it", async () => {
    const result = await runStep({
      offeredRps: 10,
      plan: plan([0]),
      seconds: 0.05,
      warmupSeconds: 0,
      drainMs: 50,
      send: (_, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            reject(signal.reason as Error);
          });
        }),
    });
    expect(result.failed).toBe(1);
    expect(result.latencyMs.p99).toBeNaN();
  });
});
