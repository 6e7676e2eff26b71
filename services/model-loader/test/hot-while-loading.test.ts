import { ROOT_CONTEXT } from "@opentelemetry/api";
import { minilmDir } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, startSimNode, type SimNode } from "./sim-node.js";

/** MiniLM's real weights under several keys: each cold key is a real 90 MB Candle load. */
const model = (key: string, pinned = false) => ({
  id: `real/${key}`,
  key,
  family: "embedding",
  dimensions: 384,
  maxInputTokens: 256,
  memoryBytes: 90_261_504,
  pinned,
  source: { kind: "dir", path: minilmDir() },
});
const COLD = ["cold-1", "cold-2", "cold-3", "cold-4"];

let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models: [model("hot", true), ...COLD.map((k) => model(k))],
    workers: 1,
    backend: "candle",
    // Room for all five: nothing is evicted, every cold request is one load beside the hot model.
    capacityBytes: 600 * MB,
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

function p99(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
}

/** The worker's "model resident" log lines: the model, when (Unix ms), and the sidecar's load time. */
function residentLines(output: string): { model: string; time: number; loadUs: number }[] {
  return output.split("\n").flatMap((line) => {
    try {
      // Each line is prefixed with the stream it came from.
      const l = JSON.parse(line.slice(line.indexOf("{"))) as {
        msg?: string;
        model?: string;
        time?: string;
        load_us?: number;
      };
      return l.msg === "model resident" && l.model !== undefined
        ? [{ model: l.model, time: Date.parse(l.time ?? ""), loadUs: Number(l.load_us) }]
        : [];
    } catch {
      return [];
    }
  });
}

async function hot(i: number): Promise<number> {
  const started = performance.now();
  const outcome = await node.gateway.embed(
    { model: "real/hot", inputs: [`hot request ${i}`] },
    ROOT_CONTEXT,
  );
  expect(outcome.tokens).toHaveLength(1);
  return performance.now() - started;
}

it("keeps serving a hot model while other models load on the same sidecar", async () => {
  await expect
    .poll(async () => (await node.api("/v1/catalog/hot")).body["copies"], { timeout: 60_000 })
    .toEqual([expect.objectContaining({ state: "resident" })]);
  for (let i = 0; i < 10; i++) await hot(i);

  const idle: number[] = [];
  for (let i = 0; i < 100; i++) idle.push(await hot(i));

  // Hot traffic runs, one request at a time, for as long as each cold model takes to come up.
  const duringLoad: number[] = [];
  const coldMs: number[] = [];
  /** Wall-clock send and answer times of every hot request sent while a cold one waited. */
  const hotSpans: { sent: number; answered: number }[] = [];
  for (const key of COLD) {
    const started = performance.now();
    const cold = { loaded: false };
    const answer = node.gateway
      .embed({ model: `real/${key}`, inputs: ["first request for a cold model"] }, ROOT_CONTEXT)
      .then((o) => {
        cold.loaded = true;
        coldMs.push(performance.now() - started);
        return o.tokens;
      });
    for (let i = 0; !cold.loaded; i++) {
      const sent = Date.now();
      duringLoad.push(await hot(i));
      hotSpans.push({ sent, answered: Date.now() });
    }
    expect(await answer).toHaveLength(1);
  }
  // Each load's span on the worker's clock: its "model resident" line, less the sidecar's load
  // time. Were loads to hold hot traffic up, a hot request sent during one would be answered
  // only after it ended, and none would fall wholly inside a load.
  const loads = residentLines(node.workers[0]?.output() ?? "").filter((l) =>
    COLD.some((k) => l.model === `real/${k}`),
  );
  expect(loads).toHaveLength(COLD.length);
  const inside = loads.map(
    ({ time, loadUs }) =>
      hotSpans.filter((h) => h.sent >= time - loadUs / 1000 && h.answered < time).length,
  );
  const loadsMs = await Promise.all(
    COLD.map(async (k) => Number((await node.api(`/v1/catalog/${k}`)).body["measuredLoadMs"])),
  );
  const figures = {
    hotIdleP99Ms: Math.round(p99(idle)),
    hotDuringLoadP99Ms: Math.round(p99(duringLoad)),
    ratio: Number((p99(duringLoad) / p99(idle)).toFixed(2)),
    hotRequestsDuringLoads: duringLoad.length,
    hotRequestsInsideEachLoad: inside,
    coldRequestMs: coldMs.map(Math.round),
    sidecarLoadMs: loadsMs.map(Math.round),
  };
  console.log(JSON.stringify(figures));
  expect(inside.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
  expect(node.loader.loader.churn()).toMatchObject({ loads: 1 + COLD.length, evictions: 0 });
}, 300_000);
