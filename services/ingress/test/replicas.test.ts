import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { request, Agent } from "node:http";
import { join } from "node:path";
import {
  freePort,
  scrapeMetrics,
  sidecarBinary,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

// SHOAL_INGRESS_PROCESSES: several ingress processes serve one port, each with its own NATS
// connection and reply subject, under a supervisor that restarts a replica that dies and
// shuts them all down gracefully on SIGTERM.

const MODEL = "sim/replicas";
let nats: NatsServerHandle;
let worker: ServiceHandle;
let ingress: ServiceHandle;
let port: number;
let metricsPort: number;

beforeAll(async () => {
  const dir = await tempDir("replicas");
  const catalogPath = join(dir, "catalog.json");
  await writeFile(catalogPath, JSON.stringify({ models: [simEmbeddingEntry(MODEL, "replicas")] }));
  nats = await startNatsServer();
  const common = { NATS_URL: nats.url, SHOAL_CATALOG: catalogPath, LOG_LEVEL: "info" };
  worker = await startService("worker", {
    env: {
      ...common,
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_BACKEND: "sim",
      SHOAL_WORKER_MODELS: MODEL,
    },
    readyMessage: "worker pulling",
  });
  port = await freePort();
  metricsPort = await freePort();
  ingress = await startService("ingress", {
    env: {
      ...common,
      SHOAL_PORT: String(port),
      SHOAL_INGRESS_PROCESSES: "2",
      SHOAL_METRICS_PORT: String(metricsPort),
    },
    readyMessage: "ingress listening",
  });
  // The ready line is the first replica's; connections go only to replicas that listen, so
  // the tests start once both have said they do.
  const until = Date.now() + 60_000;
  while (listened() < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
}, 180_000);

afterAll(async () => {
  await ingress.stop();
  await worker.stop();
  await nats.stop();
});

/** Pids of the supervisor's replicas. */
function replicas(): number[] {
  try {
    // Node children only: tsx may run an esbuild service beside them.
    return execFileSync("pgrep", ["-x", "node", "-P", String(ingress.pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter((line) => line !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * How many replicas have started listening since the supervisor started (each logs it once).
 * A replica's process exists before it listens: killing the only listening one would close
 * the shared port until its replacement listens.
 */
function listened(): number {
  return ingress
    .output()
    .split("\n")
    .filter((line) => line.includes("ingress listening")).length;
}

/** One embedding request on a connection of its own; resolves with the status and body. */
function embed(text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        port,
        host: "127.0.0.1",
        path: "/v1/embeddings",
        method: "POST",
        headers: { "content-type": "application/json" },
        agent: new Agent({ keepAlive: false }),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ model: MODEL, input: text }));
  });
}

async function allAnswered(count: number): Promise<void> {
  const answers = await Promise.all(Array.from({ length: count }, (_, i) => embed(`text ${i}`)));
  for (const a of answers) {
    expect(a.status, a.body).toBe(200);
    expect(
      (JSON.parse(a.body) as { data: { embedding: number[] }[] }).data[0]?.embedding,
    ).toHaveLength(384);
  }
}

it("answers on one port from every replica, each with its own reply subject", async () => {
  expect(replicas()).toHaveLength(2);
  // Connections are handed to the replicas in turn: forty of them reach both, and an answer
  // that went to the wrong replica's subject would never arrive.
  await allAnswered(40);
  // The supervisor serves its replicas' metrics summed: every request counted once, by the
  // replica that answered it.
  const samples = await scrapeMetrics(metricsPort);
  expect(
    samples.get(`shoal_ingress_requests_total{route="embeddings",model="${MODEL}",outcome="ok"}`),
  ).toBe(40);
  expect(samples.get('shoal_queue_arrivals_total{model="replicas",bucket="16"}')).toBe(40);
  expect(samples.get("process_cpu_seconds_total")).toBeGreaterThan(0);
});

it("replaces a replica that dies, and answers as before once it has", async () => {
  const [victim] = replicas();
  expect(victim).toBeDefined();
  const before = listened();
  process.kill(victim as number, "SIGKILL");
  await expect
    .poll(
      () =>
        replicas().length === 2 &&
        !replicas().includes(victim as number) &&
        listened() === before + 1,
      { timeout: 30_000 },
    )
    .toBe(true);
  await allAnswered(40);
}, 120_000);

it("shuts every replica down gracefully on SIGTERM and exits cleanly", async () => {
  const before = replicas();
  ingress.kill("SIGTERM");
  expect(await ingress.exited).toMatchObject({ code: 0 });
  for (const pid of before) expect(() => process.kill(pid, 0)).toThrow();
}, 60_000);
