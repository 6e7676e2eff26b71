import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, simModel, startSimNode, type SimNode } from "./sim-node.js";

let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models: [
      simModel("wide", { pinned: true, serving: { replicas: 3 } }),
      simModel("narrow", { pinned: true }),
      simModel("threaded", { pinned: true, serving: { modelThreads: 2 } }),
    ],
    workers: 4,
    capacityBytes: 1000 * MB,
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

it("keeps a pinned model on as many accelerators as its serving replicas say, and others on one", async () => {
  await expect
    .poll(async () => (await node.api("/v1/catalog/wide")).body["copies"], { timeout: 120_000 })
    .toHaveLength(3);
  const copies = (await node.api("/v1/catalog/wide")).body["copies"] as { worker: string }[];
  expect(new Set(copies.map((c) => c.worker)).size).toBe(3);
  await expect
    .poll(async () => (await node.api("/v1/catalog/narrow")).body["copies"], { timeout: 60_000 })
    .toHaveLength(1);
  // Without demand, nothing is added or dropped as idle: the copies stay what was asked.
  await new Promise((r) => setTimeout(r, 3000));
  expect((await node.api("/v1/catalog/wide")).body["copies"]).toHaveLength(3);
  expect((await node.api("/v1/catalog/narrow")).body["copies"]).toHaveLength(1);
}, 300_000);

it("places a model on two model threads with a copy of its weights for each", async () => {
  await expect
    .poll(async () => (await node.api("/v1/catalog/threaded")).body["copies"], {
      timeout: 120_000,
    })
    .toHaveLength(1);
  const [copy] = (await node.api("/v1/catalog/threaded")).body["copies"] as {
    memoryBytes: number;
  }[];
  // The sidecar loaded it on two threads (each holding the simulated 100 MB), and the
  // model-loader records what the worker reports.
  expect(copy?.memoryBytes).toBe(200 * MB);
}, 300_000);
