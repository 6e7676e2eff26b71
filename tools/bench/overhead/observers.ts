/**
 * What watches a production cluster, for the overhead bench's `--observed` runs: a Prometheus
 * stand-in scraping every process's `/metrics` on an interval, and an OTLP/HTTP receiver that
 * takes the spans every process exports and drops them. Both are as cheap as they can be, so
 * the CPU they take from the two cores is little next to what exporting costs the services.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Observers {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for every process. */
  readonly otlpEndpoint: string;
  /** Span export requests received. */
  readonly exports: () => number;
  /** Scrapes answered 200. */
  readonly scrapes: () => number;
  /** Starts scraping `ports` every `intervalMs`. */
  scrape(ports: readonly number[], intervalMs: number): void;
  close(): Promise<void>;
}

export async function startObservers(): Promise<Observers> {
  let exports = 0;
  let scrapes = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  let timer: NodeJS.Timeout | undefined;
  return {
    otlpEndpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    exports: () => exports,
    scrapes: () => scrapes,
    scrape(ports, intervalMs) {
      timer = setInterval(() => {
        for (const port of ports) {
          fetch(`http://127.0.0.1:${port}/metrics`)
            .then(async (res) => {
              await res.text();
              if (res.ok) scrapes++;
            })
            .catch(() => undefined);
        }
      }, intervalMs);
    },
    async close() {
      clearInterval(timer);
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    },
  };
}
