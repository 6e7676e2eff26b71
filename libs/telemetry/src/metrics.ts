import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { MetricsSource } from "./cluster-metrics.js";
import type { Logger } from "./logger.js";
import type { Readiness } from "./readiness.js";

/**
 * A process's metrics: its own, registered by the service, and the standard process and
 * Node.js runtime ones (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`, …).
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface MetricsServerOptions {
  /** A registry, or another source such as {@link supervisedMetrics}. */
  readonly registry: MetricsSource;
  /** 0 picks a free port. */
  readonly port: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  readonly logger: Logger;
  /** Answers `/readyz` (200 or 503 with the problems) when given; `/healthz` is always 200. */
  readonly readiness?: Readiness | undefined;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `registry` in the Prometheus text format at `GET /metrics`, and the probes
 * `/healthz` and `/readyz`, on a port of its own so that scraping and probing never compete
 * with the service's clients for a connection or a route.
 */
export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry, logger } = options;
  const server = createServer((req, res) => {
    void answer(registry, options.readiness, req, res).catch((err: unknown) => {
      // A collector that throws must not take the process down with it: the scrape fails.
      logger.error({ err }, "metrics scrape failed");
      if (!res.headersSent) send(res, 500, "metrics could not be collected");
      else res.destroy();
    });
  });
  // A scraper that holds its connection open must not keep shutdown waiting.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, "metrics serving");
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}

async function answer(
  registry: MetricsSource,
  readiness: Readiness | undefined,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const routes =
    readiness === undefined ? ["/metrics", "/healthz"] : ["/metrics", "/healthz", "/readyz"];
  if (!routes.includes(path)) {
    send(res, 404, `no route ${path}; this port serves ${routes.join(", ")}`);
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    send(res, 405, `${req.method ?? ""} is not allowed on ${path}`);
    return;
  }
  if (path === "/healthz") {
    probe(res, 200, "ok");
    return;
  }
  if (path === "/readyz") {
    if (readiness?.ready === true) probe(res, 200, "ready");
    else probe(res, 503, ["not ready", ...(readiness?.problems() ?? [])].join("\n"));
    return;
  }
  const body = await registry.metrics();
  res.writeHead(200, { "content-type": registry.contentType });
  res.end(req.method === "HEAD" ? undefined : body);
}

/** A probe's answer: plain text, for people with curl as much as for the kubelet. */
function probe(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
  res.end(`${text}\n`);
}

function send(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message } }));
}
