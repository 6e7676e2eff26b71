import { join } from "node:path";
import { repoRoot } from "@shoal/testing";
import { expect, it } from "vitest";
import { startUp } from "./up-process.js";
import {
  exportedMetricNames,
  monitoringExpressions,
  unexportedReferences,
} from "../check/monitoring-metrics.js";

// `npm start` as a user runs it: the real script brings the whole cluster up, answers an
// embedding, and a SIGINT takes every process it started down with it. The signal goes to the
// script alone, as `kill -INT` or a supervisor sends it: a terminal's Ctrl-C reaches the whole
// process group, where each service would also stop on its own, so this is the case that
// needs the script to stop them.

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

it("starts the cluster, serves an embedding, and leaves no process behind on SIGINT", async () => {
  const up = await startUp();
  const env = up.env;
  try {
    const res = await fetch(`${up.baseUrl}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MINILM, input: ["hello from npm start"] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { embedding: number[] }[] };
    expect(body.data[0]?.embedding).toHaveLength(384);
    // Ingress and the worker serve their metrics: the script's warm-up request and this one.
    const ingressMetrics = await scrape(Number(env.SHOAL_INGRESS_METRICS_PORT));
    expect(ingressMetrics).toContain(
      `shoal_ingress_requests_total{route="embeddings",model="${MINILM}",outcome="ok"} 2`,
    );
    const workerMetrics = await scrape(Number(env.SHOAL_WORKER_METRICS_PORT));
    expect(workerMetrics).toMatch(/^shoal_worker_batch_inputs_sum\{model="all-minilm-l6-v2"\} 2$/m);
    const loaderMetrics = await scrape(Number(env.SHOAL_LOADER_METRICS_PORT));
    expect(loaderMetrics).toContain('shoal_loader_resident_copies{model="all-minilm-l6-v2"} 1');
    const registryMetrics = await scrape(Number(env.SHOAL_REGISTRY_METRICS_PORT));
    expect(registryMetrics).toContain("# TYPE shoal_registry_requests_total counter");
    const offloaderMetrics = await scrape(Number(env.SHOAL_OFFLOADER_METRICS_PORT));
    expect(offloaderMetrics).toContain("# TYPE shoal_offloader_uploads_total counter");
    // Every dashboard panel and alert rule in deploy/ reads metrics these services export.
    const exported = new Set(
      [ingressMetrics, workerMetrics, loaderMetrics, registryMetrics, offloaderMetrics].flatMap(
        (m) => [...exportedMetricNames(m)],
      ),
    );
    const expressions = await monitoringExpressions(join(repoRoot(), "deploy"));
    expect(unexportedReferences(expressions, exported)).toEqual([]);
    // Everything it started is in its group: nats-server, five services, the sidecar.
    expect(up.pids().length).toBeGreaterThanOrEqual(8);
  } catch (err) {
    up.kill();
    throw err;
  }
  try {
    expect(await up.interrupt(), up.output()).toBe(130);
    expect(up.output()).not.toMatch(/a process exited/);
    // The script waits for what it stopped; a moment for the kernel to reap the last of them.
    await expect.poll(() => up.pids(), { timeout: 10_000 }).toEqual([]);
  } finally {
    // Whatever a failure left behind must not outlive the test.
    up.kill();
  }
}, 300_000);
