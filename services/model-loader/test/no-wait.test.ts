import { ROOT_CONTEXT } from "@opentelemetry/api";
import { ModelLoadingError } from "@shoal/gateway";
import { scrapeMetrics } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MB, simModel, startSimNode, type SimNode } from "./sim-node.js";

let node: SimNode;

beforeAll(async () => {
  node = await startSimNode({
    models: [simModel("hot", { pinned: true }), simModel("cold"), simModel("patient")],
    workers: 1,
    capacityBytes: 1000 * MB,
  });
}, 300_000);

afterAll(async () => {
  await node.stop();
});

const embed = (key: string, noWait: boolean) =>
  node.gateway.embed({ model: `sim/${key}`, inputs: ["one input"], noWait }, ROOT_CONTEXT);

it("answers a no-wait request for a model with no resident copy at once, and loads the model", async () => {
  await expect
    .poll(async () => (await node.api("/v1/catalog/hot")).body["copies"], { timeout: 60_000 })
    .toEqual([expect.objectContaining({ state: "resident" })]);
  // Resident: no-wait changes nothing.
  expect((await embed("hot", true)).tokens).toHaveLength(1);

  const started = performance.now();
  const refused = await embed("cold", true).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(refused).toBeInstanceOf(ModelLoadingError);
  expect((refused as ModelLoadingError).kind).toBe("unavailable");
  expect([1, 2]).toContain((refused as ModelLoadingError).retryAfterSeconds);
  // Refused before anything was queued: it cannot have waited for a load.
  expect(performance.now() - started).toBeLessThan(1000);

  // The refusal told the model-loader; retrying as the hint says finds the model resident.
  let answered = false;
  for (let attempt = 0; attempt < 30 && !answered; attempt++) {
    try {
      expect((await embed("cold", true)).tokens).toHaveLength(1);
      answered = true;
    } catch (e) {
      expect(e).toBeInstanceOf(ModelLoadingError);
      await new Promise((r) => setTimeout(r, 1000 * (e as ModelLoadingError).retryAfterSeconds));
    }
  }
  expect(answered).toBe(true);
  expect(node.loader.loader.churn().loads).toBe(2);
  // The worker counted both loads, and how long the cold one took.
  const samples = await scrapeMetrics(node.metricsPorts[0] ?? 0);
  for (const key of ["hot", "cold"]) {
    expect(samples.get(`shoal_worker_model_loads_total{model="${key}",outcome="ok"}`)).toBe(1);
    expect(samples.get(`shoal_worker_model_load_seconds_count{model="${key}"}`)).toBe(1);
  }
  expect(samples.get('shoal_worker_model_load_seconds_sum{model="cold"}')).toBeGreaterThan(0);
  // And the loader counted why it loaded each, and what is resident now.
  const loader = await scrapeMetrics(node.loaderMetricsPort);
  expect(loader.get('shoal_loader_loads_total{model="hot",reason="pinned",outcome="ok"}')).toBe(1);
  expect(loader.get('shoal_loader_loads_total{model="cold",reason="demand",outcome="ok"}')).toBe(1);
  expect(loader.get('shoal_loader_resident_copies{model="cold"}')).toBe(1);
  expect(loader.get("shoal_loader_workers")).toBe(1);
  expect(loader.get('shoal_loader_placement_rounds_total{outcome="ok"}')).toBeGreaterThan(0);
}, 120_000);

it("lets a request that may wait wait for the load it triggers", async () => {
  expect((await embed("patient", false)).tokens).toHaveLength(1);
}, 120_000);
