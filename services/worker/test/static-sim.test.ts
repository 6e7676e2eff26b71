import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SidecarClient } from "@shoal/sidecar-client";
import { minilmDir, tempDir } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
}, 60_000);

afterAll(async () => {
  await pipeline.stop();
});

it("a worker that loads its models itself gives a simulated sidecar the catalog's sim parameters", async () => {
  const dir = await tempDir("static-sim");
  const catalog = join(dir, "catalog.json");
  await writeFile(
    catalog,
    JSON.stringify({
      models: [
        {
          id: "sim/odd",
          key: "odd",
          family: "embedding",
          dimensions: 384,
          maxInputTokens: 256,
          source: { kind: "dir", path: minilmDir() },
          sim: { memoryBytes: 12_345, dim: 48 },
        },
      ],
    }),
  );
  const socketPath = join(dir, "sidecar.sock");
  await pipeline.startWorker("static", {
    SHOAL_CATALOG: catalog,
    SHOAL_WORKER_MODELS: "sim/odd",
    SHOAL_SIDECAR_BACKEND: "sim",
    SHOAL_SIDECAR_SOCKET: socketPath,
  });
  const client = await SidecarClient.connect({ socketPath });
  try {
    const [model] = (await client.stats()).models;
    expect(model?.memoryBytes).toBe(12_345);
    expect((await client.embed({ model: "odd", inputs: ["x"] })).dim).toBe(48);
  } finally {
    await client.close();
  }
}, 120_000);
