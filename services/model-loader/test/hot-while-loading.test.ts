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
    for (let i = 0; !cold.loaded; i++) duringLoad.push(await hot(i));
    expect(await answer).toHaveLength(1);
  }
  const loadsMs = COLD.map(
    async (k) => (await node.api(`/v1/catalog/${k}`)).body["measuredLoadMs"],
  );
  const figures = {
    hotIdleP99Ms: Math.round(p99(idle)),
    hotDuringLoadP99Ms: Math.round(p99(duringLoad)),
    ratio: Number((p99(duringLoad) / p99(idle)).toFixed(2)),
    hotRequestsDuringLoads: duringLoad.length,
    coldRequestMs: coldMs.map(Math.round),
    sidecarLoadMs: (await Promise.all(loadsMs)).map((v) => Math.round(Number(v))),
  };
  console.log(JSON.stringify(figures));
  // Hot work really ran during the loads (it did not wait for them), and all of it was answered.
  expect(duringLoad.length).toBeGreaterThanOrEqual(COLD.length);
  expect(node.loader.loader.churn()).toMatchObject({ loads: 1 + COLD.length, evictions: 0 });
}, 300_000);
