import { spansFromOtlpJson, type OtlpTracesJson } from "./otlp-json.js";
import type { TraceSpan } from "./span.js";

export interface FindTraces {
  /** Traces with at least one span of this service. */
  readonly service: string;
  /** Only traces with a span of this name (Jaeger's "operation"). */
  readonly operation?: string | undefined;
  /** Window on span start times. */
  readonly from: Date;
  readonly to: Date;
  /** Most traces returned. @default 1000 */
  readonly limit?: number;
}

/** Why the query API refused or could not be reached; `status` 0 when no answer came. */
export class JaegerQueryError extends Error {
  override readonly name = "JaegerQueryError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * Jaeger's query API v3 over HTTP (`/api/v3/…`), which answers in OTLP/JSON. Each call has its
 * own timeout: a trace backend that is slow or down makes a report fail with a clear error,
 * never hang.
 */
export class JaegerQuery {
  readonly #base: string;
  readonly #timeoutMs: number;

  /** @param baseUrl e.g. `http://127.0.0.1:16686` */
  constructor(baseUrl: string, options: { readonly timeoutMs?: number } = {}) {
    this.#base = baseUrl.replace(/\/+$/, "");
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Services that exported spans. */
  async services(): Promise<string[]> {
    const body = (await this.#get("/api/v3/services")) as { services?: string[] } | undefined;
    return body?.services ?? [];
  }

  /** One trace's spans; empty when the backend has none under that id. */
  async trace(traceId: string): Promise<TraceSpan[]> {
    const body = await this.#get(`/api/v3/traces/${encodeURIComponent(traceId)}`);
    return body === undefined ? [] : spansFromOtlpJson(resultOf(body));
  }

  /** The spans of every trace in the window that touched `service` (whole traces). */
  async find(query: FindTraces): Promise<TraceSpan[]> {
    const params = new URLSearchParams({
      "query.service_name": query.service,
      "query.start_time_min": query.from.toISOString(),
      "query.start_time_max": query.to.toISOString(),
      "query.num_traces": String(query.limit ?? 1000),
    });
    if (query.operation !== undefined) params.set("query.operation_name", query.operation);
    const body = await this.#get(`/api/v3/traces?${params.toString()}`);
    return body === undefined ? [] : spansFromOtlpJson(resultOf(body));
  }

  /** The parsed JSON body; undefined for "not found" (Jaeger's answer to an empty result). */
  async #get(path: string): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.#base}${path}`, { signal: AbortSignal.timeout(this.#timeoutMs) });
    } catch (err) {
      throw new JaegerQueryError(
        `trace backend at ${this.#base} did not answer ${path}: ${(err as Error).message}`,
        0,
      );
    }
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    const text = await res.text();
    if (!res.ok) {
      throw new JaegerQueryError(
        `trace backend at ${this.#base} answered ${res.status} to ${path}: ${text.slice(0, 300)}`,
        res.status,
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new JaegerQueryError(`trace backend at ${this.#base} sent non-JSON for ${path}`, 200);
    }
  }
}

function resultOf(body: unknown): OtlpTracesJson {
  return (body as { result?: OtlpTracesJson }).result ?? {};
}
