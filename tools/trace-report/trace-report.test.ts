import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { groupTraces } from "@shoal/traces";
import {
  freePort,
  repoRoot,
  sidecarBinary,
  simEmbeddingEntry,
  startJaeger,
  startNatsServer,
  startService,
  tempDir,
  type JaegerHandle,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Report } from "./report.js";

// `npm run trace-report` against the real trace backend, fed by a real cluster (ingress, a
// worker whose sidecar simulates a model taking 40 ms a batch) with every request traced. Two
// scenarios built to have a known answer: requests arriving while the worker is stalled wait
// in the queue for it (queue wait dominates); one request at a time to a running worker never
// queues (compute dominates).

const MODEL = "sim/slow";
const run = promisify(execFile);

let jaeger: JaegerHandle;
let nats: NatsServerHandle;
let worker: ServiceHandle;
let ingress: ServiceHandle;
let baseUrl: string;

beforeAll(async () => {
  jaeger = await startJaeger();
  const dir = await tempDir("trace-report");
  const catalog = join(dir, "catalog.json");
  await writeFile(
    catalog,
    JSON.stringify({ models: [simEmbeddingEntry(MODEL, "slow", { fixedUs: 40_000 })] }),
  );
  nats = await startNatsServer();
  const common = {
    NATS_URL: nats.url,
    SHOAL_CATALOG: catalog,
    LOG_LEVEL: "info",
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    OTEL_TRACES_SAMPLER: "always_on",
  };
  worker = await startService("worker", {
    env: {
      ...common,
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_BACKEND: "sim",
      SHOAL_WORKER_MODELS: MODEL,
    },
    readyMessage: "worker pulling",
  });
  const port = await freePort();
  ingress = await startService("ingress", {
    env: { ...common, SHOAL_PORT: String(port) },
    readyMessage: "ingress listening",
  });
  baseUrl = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
  await ingress.stop();
  await worker.stop();
  await nats.stop();
  await jaeger.stop();
}, 60_000);

async function embed(i: number): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, input: [`request ${i}`] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/**
 * Runs `load`, waits until the backend holds all `requests` traces complete (spans come from
 * three processes in batches), and returns the report's JSON for the window it ran in.
 */
async function scenario(requests: number, load: () => Promise<void>): Promise<Report> {
  const from = new Date();
  await load();
  const to = new Date();
  await expect
    .poll(
      async () => {
        const traces = groupTraces(
          await jaeger.query.find({ service: "shoal-ingress", from, to, limit: 1000 }),
        );
        return traces.filter((t) => t.named("sidecar.embed").length > 0).length;
      },
      { timeout: 30_000, interval: 500 },
    )
    .toBe(requests);
  const { stdout } = await run(
    "npm",
    [
      "run",
      "--silent",
      "trace-report",
      "--",
      "--jaeger",
      jaeger.queryUrl,
      "--from",
      from.toISOString(),
      "--to",
      to.toISOString(),
      "--json",
    ],
    { cwd: repoRoot() },
  );
  return JSON.parse(stdout) as Report;
}

it("names queue wait the dominant phase when requests wait for a stalled worker", async () => {
  const report = await scenario(8, async () => {
    process.kill(worker.pid, "SIGSTOP");
    const answers = Promise.all(Array.from({ length: 8 }, (_, i) => embed(i)));
    await new Promise((r) => setTimeout(r, 1_000));
    process.kill(worker.pid, "SIGCONT");
    await answers;
  });
  expect(report.all.requests).toBe(8);
  expect(report.all.dominant).toBe("queue");
  expect(report.models[MODEL]?.dominant).toBe("queue");
  expect(report.all.phases.queue.p50).toBeGreaterThan(500);
  expect(report.slowest[0]?.path.map((p) => p.phase)).toContain("queue");
}, 90_000);

it("names compute the dominant phase when requests come one at a time", async () => {
  const report = await scenario(6, async () => {
    for (let i = 0; i < 6; i++) await embed(i);
  });
  expect(report.all.requests).toBe(6);
  expect(report.all.dominant).toBe("compute");
  expect(report.all.phases.compute.p50).toBeGreaterThanOrEqual(40);
  // Its text form says the same, with each slow request's time line.
  const { stdout } = await run(
    "npm",
    ["run", "--silent", "trace-report", "--", "--jaeger", jaeger.queryUrl, "--last", "5m"],
    { cwd: repoRoot() },
  );
  expect(stdout).toMatch(/Dominant phase: (queue|compute)/);
  expect(stdout).toContain("compute 4");
  expect(stdout).toContain("(shoal-sidecar/sidecar.embed)");
}, 90_000);

it("fails with a clear message and exit status 1 when the trace backend is down", async () => {
  const closed = await freePort();
  const failed = await run(
    "npm",
    ["run", "--silent", "trace-report", "--", "--jaeger", `http://127.0.0.1:${closed}`],
    { cwd: repoRoot() },
  ).catch((err: unknown) => err);
  expect(failed).toMatchObject({ code: 1 });
  expect((failed as { stderr: string }).stderr).toContain("Is the trace backend running");
});
