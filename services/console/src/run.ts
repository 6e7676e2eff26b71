import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { Catalog } from "@shoal/config";
import type { NatsAuth } from "@shoal/jetstream";
import { compileResidencyPolicyOptions } from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import { JaegerQuery } from "@shoal/traces";
import { Benchmarks } from "./benchmarks.js";
import { Collector } from "./collector.js";
import { IngressScraper } from "./ingress-scraper.js";
import { LivePages } from "./live-pages.js";
import { handlePage, loadWebFiles } from "./pages.js";

export interface ConsoleOptions {
  readonly natsServers: string;
  readonly natsAuth?: NatsAuth;
  readonly catalog: Catalog;
  readonly port: number;
  /** @default 127.0.0.1 */
  readonly host?: string | undefined;
  /** Ingress `/metrics` URLs: request latency and arrivals. None: those panels say so. */
  readonly ingressMetrics?: readonly string[];
  /** Model-loader API URLs (`http://host:8090`), checked for an answer every 5 s. */
  readonly loaders?: readonly string[];
  /** Jaeger's query API, for the slowest recent requests; and its UI, for their links. */
  readonly traces?: { readonly queryUrl: string; readonly uiUrl?: string | undefined } | undefined;
  /**
   * The model-loaders' headroom settings (`SHOAL_HEADROOM_BYTES`, `SHOAL_HEADROOM_PERCENT`), to
   * mark it on each accelerator's memory bar; their defaults when unset.
   */
  readonly headroom?: {
    readonly bytes?: number | undefined;
    readonly fraction?: number | undefined;
  };
  /** Directories holding bench and autotune results. */
  readonly benchmarkDirs?: readonly string[];
  /** History the latency percentiles and slow requests cover. @default 300000 (5 minutes) */
  readonly windowMs?: number | undefined;
  /** Pages open at once; more are answered 503. @default 200 */
  readonly maxPages?: number | undefined;
  /** The page's files; the service's `web/` directory by default. */
  readonly webDir?: string;
  readonly logger: Logger;
  readonly readiness: { set(component: string, problem: string | undefined): void };
}

export interface RunningConsole {
  readonly url: string;
  stop(): Promise<void>;
}

const SNAPSHOT_EVERY_MS = 1_000;

/** Starts the console: its readers, a snapshot a second to every open page, and its HTTP port. */
export async function run(options: ConsoleOptions): Promise<RunningConsole> {
  const web = await loadWebFiles(options.webDir ?? defaultWebDir());
  const benchmarks = new Benchmarks(options.benchmarkDirs ?? []);
  const urls = options.ingressMetrics ?? [];
  const policy = compileResidencyPolicyOptions({
    headroomBytes: options.headroom?.bytes,
    headroomFraction: options.headroom?.fraction,
  });
  const collector = new Collector({
    natsServers: options.natsServers,
    natsAuth: options.natsAuth ?? {},
    catalog: options.catalog,
    ingress: urls.length === 0 ? undefined : new IngressScraper(urls),
    loaders: options.loaders ?? [],
    traces:
      options.traces === undefined
        ? undefined
        : {
            query: new JaegerQuery(options.traces.queryUrl, { timeoutMs: 3_000 }),
            uiUrl: options.traces.uiUrl ?? options.traces.queryUrl,
          },
    benchmarks,
    headroom: (capacity) => Math.max(policy.headroomBytes, policy.headroomFraction * capacity),
    windowMs: options.windowMs ?? 300_000,
    logger: options.logger,
    readiness: options.readiness,
  });
  collector.start();
  const live = new LivePages(options.maxPages ?? 200);
  let latest = JSON.stringify(collector.snapshot());
  const tick = setInterval(() => {
    collector.recordHistory();
    latest = JSON.stringify(collector.snapshot());
    live.send(latest);
  }, SNAPSHOT_EVERY_MS);
  const server = createServer((req, res) => {
    handlePage({ web, live, benchmarks, snapshot: () => latest }, req, res).catch(
      (err: unknown) => {
        options.logger.error({ err, url: req.url }, "console request failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "internal error" } }));
      },
    );
  });
  const host = options.host ?? "127.0.0.1";
  await listen(server, options.port, host);
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  options.logger.info({ url }, "console listening");
  return {
    url,
    async stop() {
      clearInterval(tick);
      live.closeAll();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      });
      await collector.stop();
    },
  };
}

/** `web/` beside the sources, or beside the bundle in a production build. */
function defaultWebDir(): string {
  const bundled = fileURLToPath(new URL("./web/", import.meta.url));
  return existsSync(bundled) ? bundled : fileURLToPath(new URL("../web/", import.meta.url));
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
