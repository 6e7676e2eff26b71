import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { SidecarClient, toFloat32Array } from "@shoal/sidecar-client";
import { repoRoot, tempDir } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
}, 60_000);

afterAll(async () => {
  await pipeline.stop();
});

interface Sentence {
  readonly text: string;
  readonly embedding: readonly number[];
}

it("a bundle's dtype reaches the sidecar's load: MiniLM in f16 takes half the memory and still matches the reference", async () => {
  const dir = await tempDir("dtype");
  const bundle = join(dir, "half.json");
  await writeFile(
    bundle,
    JSON.stringify({ profile: "half", models: { [MINILM]: { serving: { dtype: "f16" } } } }),
  );
  const socketPath = join(dir, "sidecar.sock");
  await pipeline.startWorker("half", {
    SHOAL_BUNDLE: bundle,
    SHOAL_WORKER_MODELS: MINILM,
    SHOAL_SIDECAR_SOCKET: socketPath,
  });
  const client = await SidecarClient.connect({ socketPath });
  try {
    const [model] = (await client.stats()).models;
    // 22.7M parameters: about 91 MB in f32, 45 MB in f16.
    expect(model?.memoryBytes).toBeGreaterThan(40_000_000);
    expect(model?.memoryBytes).toBeLessThan(50_000_000);
  } finally {
    await client.close();
  }

  const fixture = join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json");
  const sentences = (JSON.parse(readFileSync(fixture, "utf8")) as { sentences: Sentence[] })
    .sentences;
  const inputs = sentences.slice(0, 8);
  const outcome = await pipeline.gateway.embed(
    { model: MINILM, inputs: inputs.map((s) => s.text) },
    ROOT_CONTEXT,
  );
  const values = toFloat32Array(outcome.embeddings);
  inputs.forEach((sentence, i) => {
    const row = values.subarray(i * outcome.dim, (i + 1) * outcome.dim);
    const dot = sentence.embedding.reduce((sum, x, k) => sum + x * (row[k] ?? 0), 0);
    // Both sides are unit vectors: the dot product is their cosine.
    expect(dot, `sentence ${i}`).toBeGreaterThanOrEqual(0.999);
  });
}, 180_000);
