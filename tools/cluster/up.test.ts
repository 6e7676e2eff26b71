import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { freePort, repoRoot, tempDir } from "@shoal/testing";
import { expect, it } from "vitest";
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

/** Pids of the processes in process group `group` still alive. */
function processesIn(group: number): number[] {
  try {
    return execFileSync("pgrep", ["-g", String(group)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

it("starts the cluster, serves an embedding, and leaves no process behind on SIGINT", async () => {
  const port = await freePort();
  const env = {
    ...process.env,
    SHOAL_PORT: String(port),
    SHOAL_NATS_PORT: String(await freePort()),
    SHOAL_LOADER_PORT: String(await freePort()),
    SHOAL_REGISTRY_PORT: String(await freePort()),
    SHOAL_INGRESS_METRICS_PORT: String(await freePort()),
    SHOAL_WORKER_METRICS_PORT: String(await freePort()),
    SHOAL_LOADER_METRICS_PORT: String(await freePort()),
    SHOAL_REGISTRY_METRICS_PORT: String(await freePort()),
    SHOAL_OFFLOADER_METRICS_PORT: String(await freePort()),
    SHOAL_CLUSTER_DIR: join(await tempDir("up-sh"), "cluster"),
  };
  // Its own process group, like a shell's foreground job.
  const up = spawn("bash", [join(repoRoot(), "tools/cluster/up.sh")], {
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const group = up.pid ?? 0;
  let output = "";
  up.stdout.on("data", (d: Buffer) => (output += d.toString()));
  up.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = once(up, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    const deadline = Date.now() + 240_000;
    while (!output.includes("Shoal is serving")) {
      if (up.exitCode !== null || Date.now() > deadline) {
        throw new Error(`the cluster did not come up:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const res = await fetch(`http://127.0.0.1:${port}/v1/embeddings`, {
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
    expect(processesIn(group).length).toBeGreaterThanOrEqual(8);
  } finally {
    up.kill("SIGINT");
  }
  try {
    const [code] = await exited;
    expect(code, output).toBe(130);
    expect(output).not.toMatch(/a process exited/);
    // The script waits for what it stopped; a moment for the kernel to reap the last of them.
    await expect.poll(() => processesIn(group), { timeout: 10_000 }).toEqual([]);
  } finally {
    // Whatever a failure left behind must not outlive the test.
    if (processesIn(group).length > 0) process.kill(-group, "SIGKILL");
  }
}, 300_000);
