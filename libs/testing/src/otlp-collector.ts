import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as an OTLP/JSON exporter sent it. */
export interface CollectedSpan {
  readonly service: string;
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
}

export interface OtlpCollector {
  /** Base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` (exporters append `/v1/traces`). */
  readonly endpoint: string;
  readonly spans: readonly CollectedSpan[];
  /** Resolves once `predicate` holds for the spans received so far, or rejects after `timeoutMs`. */
  waitFor(
    predicate: (spans: readonly CollectedSpan[]) => boolean,
    timeoutMs: number,
  ): Promise<void>;
  close(): Promise<void>;
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: { stringValue?: string } }[] };
    scopeSpans?: {
      spans?: { name: string; traceId: string; spanId: string; parentSpanId?: string }[];
    }[];
  }[];
}

/**
 * A real OTLP/HTTP receiver for the JSON encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`),
 * so tests check what every process actually exported rather than an in-memory stand-in.
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        try {
          collect(JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpJson, spans);
        } catch {
          res.writeHead(400).end();
          return;
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    async waitFor(predicate, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > until) {
          const names = spans.map((s) => `${s.service}/${s.name}`).join(", ");
          throw new Error(`OTLP collector: condition not met within ${timeoutMs} ms; got ${names}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

function collect(body: OtlpJson, into: CollectedSpan[]): void {
  for (const rs of body.resourceSpans ?? []) {
    const service =
      rs.resource?.attributes?.find((a) => a.key === "service.name")?.value?.stringValue ?? "";
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        into.push({
          service,
          name: span.name,
          traceId: span.traceId.toLowerCase(),
          spanId: span.spanId.toLowerCase(),
          parentSpanId: (span.parentSpanId ?? "").toLowerCase(),
        });
      }
    }
  }
}
