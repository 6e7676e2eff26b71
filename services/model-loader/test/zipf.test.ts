import { ROOT_CONTEXT } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, simModel, startSimNode, type SimNode } from "./sim-node.js";

const MODELS = 20;
const PINNED = ["m00", "m01"];
const keys = Array.from({ length: MODELS }, (_, i) => `m${String(i).padStart(2, "0")}`);

let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models: keys.map((key) => simModel(key, { pinned: PINNED.includes(key) })),
    workers: 4,
    // Three 100 MB models per accelerator once the 10% headroom is kept free.
    capacityBytes: 340 * MB,
    policy: { minResidencyMs: 1000, idleDropMs: 5000 },
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

/** Rank r (1-based) is drawn with probability ∝ 1/r^s; a fixed seed keeps runs comparable. */
function zipfSampler(n: number, s: number, seed: number): () => number {
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s);
  const total = weights.reduce((a, b) => a + b, 0);
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    let u = (state / 2 ** 32) * total;
    for (let i = 0; i < n; i++) {
      u -= weights[i] ?? 0;
      if (u <= 0) return i;
    }
    return n - 1;
  };
}

it("answers every Zipf request over 20 models on 4 accelerators of 3 slots, never evicting a pinned model", async () => {
  // Every delete of a pinned model's copy would show in the bucket the loader publishes.
  const pinnedDeletes: string[] = [];
  const watch = await node.kv.watch({ key: PINNED.map((k) => `replica.${k}.*`) });
  void (async () => {
    for await (const e of watch) if (e.operation !== "PUT") pinnedDeletes.push(e.key);
  })();
  // Pinned models are placed before any work arrives.
  for (const key of PINNED) {
    await expect
      .poll(async () => (await node.api(`/v1/catalog/${key}`)).body["copies"], { timeout: 60_000 })
      .toEqual([expect.objectContaining({ state: "resident" })]);
  }

  const pick = zipfSampler(MODELS, 1.1, 42);
  const requests = 600;
  const started = performance.now();
  const answers: Promise<readonly number[]>[] = [];
  const asked: number[] = [];
  for (let i = 0; i < requests; i++) {
    const model = pick();
    asked.push(model);
    answers.push(
      node.gateway
        .embed(
          { model: `sim/${keys[model]}`, inputs: [`request ${i} for model ${model}`] },
          ROOT_CONTEXT,
        )
        .then((o) => o.tokens),
    );
    // About 40 requests per second.
    await new Promise((r) => setTimeout(r, 25));
  }
  const settled = await Promise.allSettled(answers);
  const elapsedMin = (performance.now() - started) / 60_000;
  const failed = settled.filter((s) => s.status === "rejected");
  expect(failed.map((f) => String(f.reason))).toEqual([]);
  for (const s of settled) {
    if (s.status === "fulfilled") expect(s.value).toHaveLength(1);
  }
  // The tail models really were asked for, so placement had to evict and reload.
  expect(new Set(asked).size).toBeGreaterThan(12);

  const churn = node.loader.loader.churn();
  const residency = (await node.api("/v1/residency")).body;
  console.log(
    JSON.stringify({
      requests,
      distinctModels: new Set(asked).size,
      elapsedMin: Number(elapsedMin.toFixed(3)),
      loadsPerMinute: Number((churn.loads / elapsedMin).toFixed(1)),
      ...churn,
    }),
  );
  expect(churn.loads).toBeGreaterThan(12);
  expect(churn.evictions).toBeGreaterThan(0);
  expect(pinnedDeletes).toEqual([]);
  for (const key of PINNED) {
    expect((await node.api(`/v1/catalog/${key}`)).body["copies"]).toContainEqual(
      expect.objectContaining({ state: "resident" }),
    );
  }
  // Memory is never planned past a worker's capacity less headroom.
  type WorkerView = { capacityBytes: number; replicas: { state: string; memoryBytes: number }[] };
  for (const w of residency["workers"] as WorkerView[]) {
    const used = w.replicas
      .filter((r) => r.state === "resident")
      .reduce((n, r) => n + r.memoryBytes, 0);
    expect(used).toBeLessThanOrEqual(w.capacityBytes * 0.9);
  }
  watch.stop();
}, 300_000);
