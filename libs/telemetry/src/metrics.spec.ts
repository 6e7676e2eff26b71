import { request } from "node:http";
import { Counter, Gauge } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { createMetricsRegistry, serveMetrics, type MetricsServer } from "./metrics.js";
import { Readiness } from "./readiness.js";

const logger = createLogger({ service: "test", level: "silent" });
let server: MetricsServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(
  path: string,
  method = "GET",
): Promise<{ status: number; type: string; body: string }> {
  const res = await fetch(`http://127.0.0.1:${server?.port ?? 0}${path}`, { method });
  return {
    status: res.status,
    type: res.headers.get("content-type") ?? "",
    body: await res.text(),
  };
}

describe("serveMetrics", () => {
  it("serves the registry in the Prometheus text format, with the process metrics", async () => {
    const registry = createMetricsRegistry();
    const requests = new Counter({
      name: "test_requests_total",
      help: "Requests.",
      labelNames: ["model"],
      registers: [registry],
    });
    requests.labels({ model: "m" }).inc(3);
    server = await serveMetrics({ registry, port: 0, logger });
    const res = await get("/metrics");
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toContain('test_requests_total{model="m"} 3');
    expect(res.body).toMatch(/^process_cpu_seconds_total \d/m);
    expect((await get("/metrics", "HEAD")).body).toBe("");
  });

  it("answers other paths 404 and other methods 405, with a JSON error", async () => {
    server = await serveMetrics({ registry: createMetricsRegistry(), port: 0, logger });
    const missing = await get("/nope");
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toEqual({
      error: { message: "no route /nope; this port serves /metrics, /healthz" },
    });
    const posted = await get("/metrics", "POST");
    expect(posted.status).toBe(405);
    expect(posted.body).toMatch(/POST is not allowed/);
  });

  it("answers /healthz always and /readyz 503 with the problems until every one clears", async () => {
    const readiness = new Readiness();
    server = await serveMetrics({ registry: createMetricsRegistry(), port: 0, logger, readiness });
    expect(await get("/healthz")).toMatchObject({ status: 200, body: "ok\n" });
    expect(await get("/readyz")).toMatchObject({
      status: 503,
      body: "not ready\nstart: starting\n",
    });
    readiness.started();
    readiness.set("nats", "disconnected");
    expect((await get("/readyz")).body).toBe("not ready\nnats: disconnected\n");
    expect((await get("/healthz")).status).toBe(200);
    readiness.set("nats", undefined);
    expect(await get("/readyz")).toMatchObject({ status: 200, type: "text/plain; charset=utf-8" });
    expect((await get("/readyz", "DELETE")).status).toBe(405);
  });

  it("fails a scrape whose collector throws with 500, and serves the next", async () => {
    const registry = createMetricsRegistry();
    let broken = true;
    new Gauge({
      name: "test_flaky",
      help: "Throws while broken.",
      registers: [registry],
      collect() {
        if (broken) throw new Error("collector broke");
        this.set(1);
      },
    });
    server = await serveMetrics({ registry, port: 0, logger });
    expect((await get("/metrics")).status).toBe(500);
    broken = false;
    const res = await get("/metrics");
    expect(res.status).toBe(200);
    expect(res.body).toContain("test_flaky 1");
  });

  it("closes while a scraper holds its connection open", async () => {
    server = await serveMetrics({ registry: createMetricsRegistry(), port: 0, logger });
    const port = server.port;
    // A keep-alive connection left open after its scrape, as Prometheus keeps one.
    await new Promise<void>((resolve, reject) => {
      const req = request({
        port,
        path: "/metrics",
        agent: false,
        headers: { connection: "keep-alive" },
      });
      req.on("response", (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end();
    });
    await server.close();
    server = undefined;
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });

  it("refuses to start on a port already taken", async () => {
    server = await serveMetrics({ registry: createMetricsRegistry(), port: 0, logger });
    await expect(
      serveMetrics({ registry: createMetricsRegistry(), port: server.port, logger }),
    ).rejects.toThrow(/EADDRINUSE/);
  });
});
