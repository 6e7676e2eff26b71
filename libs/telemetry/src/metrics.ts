import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { MetricsSource } from "./cluster-metrics.js";
import type { Logger } from "./logger.js";

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
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `registry` in the Prometheus text format at `GET /metrics`, on a port of its own so
 * that scraping never competes with the service's clients for a connection or a route.
 */
export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry, logger } = options;
  const server = createServer((req, res) => {
    void answer(registry, req, res).catch((err: unknown) => {
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
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? "/").split("?")[0];
  if (path !== "/metrics") {
    send(res, 404, `no route ${path ?? ""}; metrics are at /metrics`);
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    send(res, 405, `${req.method ?? ""} is not allowed on /metrics`);
    return;
  }
  const body = await registry.metrics();
  res.writeHead(200, { "content-type": registry.contentType });
  res.end(req.method === "HEAD" ? undefined : body);
}

function send(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message } }));
}
