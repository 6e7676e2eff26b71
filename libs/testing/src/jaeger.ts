import { join } from "node:path";
import { JaegerQuery, type TraceSpan } from "@shoal/traces";
import { freePort } from "./free-port.js";
import { ManagedProcess } from "./managed-process.js";
import { jaegerBinary, repoRoot } from "./paths.js";

/** A Jaeger v2 trace backend owned by a test, on free ports, with deploy/jaeger/config.yaml. */
export interface JaegerHandle {
  /** Base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP/HTTP; exporters append `/v1/traces`). */
  readonly otlpEndpoint: string;
  /** Base URL of the query API, for `npm run trace-report -- --jaeger`. */
  readonly queryUrl: string;
  readonly query: JaegerQuery;
  /**
   * The trace's spans once `done` holds for them; rejects after `timeoutMs` with the spans seen.
   * Spans arrive in batches from several processes, so a trace is read until complete.
   */
  waitForTrace(
    traceId: string,
    done: (spans: readonly TraceSpan[]) => boolean,
    timeoutMs: number,
  ): Promise<TraceSpan[]>;
  stop(): Promise<void>;
}

/**
 * Starts the pinned Jaeger on free loopback ports and resolves once its health check passes.
 *
 * @throws MissingPrerequisiteError when the binary is missing (tools/setup/trace-backend.sh).
 */
export async function startJaeger(readyTimeoutMs = 30_000): Promise<JaegerHandle> {
  const binary = jaegerBinary();
  const [otlp, otlpGrpc, queryPort, queryGrpc, health, metrics] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const child = ManagedProcess.spawn(
    binary,
    ["--config", join(repoRoot(), "deploy", "jaeger", "config.yaml")],
    {
      env: {
        ...process.env,
        SHOAL_TRACES_OTLP_PORT: String(otlp),
        SHOAL_TRACES_OTLP_GRPC_PORT: String(otlpGrpc),
        SHOAL_TRACES_QUERY_PORT: String(queryPort),
        SHOAL_TRACES_QUERY_GRPC_PORT: String(queryGrpc),
        SHOAL_TRACES_HEALTH_PORT: String(health),
        SHOAL_TRACES_METRICS_PORT: String(metrics),
      },
      stdin: "ignore",
    },
  );
  try {
    await untilHealthy(`http://127.0.0.1:${health}/status`, readyTimeoutMs, child);
  } catch (error) {
    await child.terminate("SIGKILL");
    throw error;
  }
  const queryUrl = `http://127.0.0.1:${queryPort}`;
  const query = new JaegerQuery(queryUrl, { timeoutMs: 5_000 });
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    queryUrl,
    query,
    async waitForTrace(traceId, done, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const spans = await query.trace(traceId);
        if (done(spans)) return spans;
        if (Date.now() > until) {
          const names = spans.map((s) => `${s.service}/${s.name}`).join(", ");
          throw new Error(`trace ${traceId} incomplete after ${timeoutMs} ms; has: ${names}`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async stop() {
      await child.terminate();
    },
  };
}

async function untilHealthy(url: string, timeoutMs: number, child: ManagedProcess): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    const exit = child.exit;
    if (exit !== undefined || Date.now() > until) {
      const why = exit === undefined ? `not healthy within ${timeoutMs} ms` : "exited";
      throw new Error(`jaeger ${why}:\n${child.output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
