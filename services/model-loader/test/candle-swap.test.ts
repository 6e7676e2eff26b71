import { ROOT_CONTEXT } from "@opentelemetry/api";
import { toFloat32Array } from "@shoal/sidecar-client";
import { minilmDir, smollm2Dir } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, startSimNode, type SimNode } from "./sim-node.js";

/**
 * Two real Candle models of different families on one sidecar whose memory budget fits only
 * one at a time: MiniLM-L6-v2 (embeddings, 90 MB of safetensors) and SmolLM2-135M-Instruct
 * (generation, 97 MB of Q4_1 GGUF, held for the CPU's kernels in 160 to 195 MB), so every swap
 * reads and places real weights.
 */
const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
const SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct";
const models = [
  {
    id: MINILM,
    key: "all-minilm-l6-v2",
    family: "embedding",
    dimensions: 384,
    maxInputTokens: 256,
    memoryBytes: 90_261_504,
    source: { kind: "dir", path: minilmDir() },
  },
  {
    id: SMOLLM2,
    key: "smollm2-135m-instruct",
    family: "generator",
    weights: "gguf",
    dimensions: 0,
    maxInputTokens: 8192,
    memoryBytes: 194_524_416,
    source: { kind: "dir", path: smollm2Dir() },
  },
];

let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models,
    workers: 1,
    backend: "candle",
    // 240 MB less 10 % headroom holds either model, never both.
    capacityBytes: 240 * MB,
    policy: { minResidencyMs: 200 },
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

async function embed(): Promise<Float32Array> {
  const outcome = await node.gateway.embed(
    { model: MINILM, inputs: ["the same sentence every time"] },
    ROOT_CONTEXT,
  );
  return toFloat32Array(outcome.embeddings);
}

async function generate(): Promise<string> {
  const started = await node.streams.generate(
    {
      model: SMOLLM2,
      messages: [{ role: "user", content: "Name three colors." }],
      maxTokens: 12,
      temperature: 0,
    },
    ROOT_CONTEXT,
  );
  let text = "";
  for await (const event of started.stream) if (event.kind === "tokens") text += event.text;
  return text;
}

it("serves alternating embedding and chat traffic correctly by swapping, and measures the swaps", async () => {
  const rounds = 5;
  const latenciesMs: number[] = [];
  let reference: Float32Array | undefined;
  let greedy: string | undefined;
  for (let i = 0; i < rounds * 2; i++) {
    const started = performance.now();
    if (i % 2 === 0) {
      // The same input every time: a swap that mixed models up or served garbage shows here.
      const row = await embed();
      latenciesMs.push(performance.now() - started);
      expect(row).toHaveLength(384);
      reference ??= row;
      const dot = row.reduce((n, v, j) => n + v * (reference?.[j] ?? 0), 0);
      expect(dot).toBeGreaterThan(0.999);
    } else {
      // Greedy decoding: every reload must give back the same text.
      const text = await generate();
      latenciesMs.push(performance.now() - started);
      expect(text.length).toBeGreaterThan(0);
      greedy ??= text;
      expect(text).toBe(greedy);
    }
  }
  const churn = node.loader.loader.churn();
  const loadMs = async (key: string): Promise<unknown> =>
    (await node.api(`/v1/catalog/${key}`)).body["measuredLoadMs"];
  const minilmLoadMs = await loadMs("all-minilm-l6-v2");
  const smollm2LoadMs = await loadMs("smollm2-135m-instruct");
  expect(minilmLoadMs).toEqual(expect.any(Number));
  expect(smollm2LoadMs).toEqual(expect.any(Number));
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      requests: latenciesMs.length,
      loads: churn.loads,
      evictions: churn.evictions,
      thrash: churn.thrash,
      minilmLoadMs,
      smollm2LoadMs,
      swapRequestMsP50: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
      swapRequestMsMax: Math.round(sorted.at(-1) ?? 0),
    }),
  );
  // Every request after the first needed the other model: one load each, never two resident.
  expect(churn.loads).toBe(rounds * 2);
  expect(churn.evictions).toBe(rounds * 2 - 1);
  const residency = (await node.api("/v1/residency")).body;
  const replicas = (residency["workers"] as { replicas: unknown[] }[])[0]?.replicas;
  expect(replicas).toHaveLength(1);
}, 300_000);
