import type { IncomingMessage, ServerResponse } from "node:http";
import type { Catalog, ModelEntry } from "@shoal/config";
import type { ModelLoader } from "./model-loader.js";
import type { WorkerRegistry } from "./worker-registry.js";

/** What the API reads. */
export interface ApiDeps {
  readonly node: string;
  readonly catalog: Catalog;
  readonly loader: ModelLoader;
  readonly registry: WorkerRegistry;
}

/**
 * The model-loader's read-only HTTP API (JSON, for operators and tools):
 *
 *   GET /v1/catalog             every catalog model, with its state on this node
 *   GET /v1/catalog/<key>       one model (by key; ids contain `/`, so the key addresses it)
 *   GET /v1/residency           workers, their memory and copies, and load/eviction counters
 *
 * Unknown paths are 404, other methods 405; nothing here changes state.
 */
export function handleApi(deps: ApiDeps, req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(res, 405, { error: "only GET is supported" }, { allow: "GET, HEAD" });
    return;
  }
  const path = new URL(req.url ?? "/", "http://loader").pathname;
  if (path === "/v1/catalog") {
    send(res, 200, { node: deps.node, models: deps.catalog.models.map((m) => describe(deps, m)) });
    return;
  }
  if (path.startsWith("/v1/catalog/")) {
    const entry = deps.catalog.byKey(decodeURIComponent(path.slice("/v1/catalog/".length)));
    if (entry === undefined) {
      send(res, 404, { error: "no catalog model has this key" });
      return;
    }
    send(res, 200, describe(deps, entry));
    return;
  }
  if (path === "/v1/residency") {
    send(res, 200, {
      node: deps.node,
      workers: deps.registry.all().map((w) => ({
        worker: w.worker,
        capacityBytes: w.capacityBytes,
        busy: w.busy,
        replicas: [...w.replicas].map(([model, r]) => ({
          model,
          state: r.state,
          memoryBytes: r.bytes,
          sinceUnixMs: r.sinceUnixMs,
        })),
      })),
      churn: deps.loader.churn(),
    });
    return;
  }
  send(res, 404, {
    error: "not found",
    paths: ["/v1/catalog", "/v1/catalog/<key>", "/v1/residency"],
  });
}

function describe(deps: ApiDeps, m: ModelEntry): Record<string, unknown> {
  const copies = deps.registry.all().flatMap((w) => {
    const r = w.replicas.get(m.key);
    return r === undefined ? [] : [{ worker: w.worker, state: r.state, memoryBytes: r.bytes }];
  });
  return {
    id: m.id,
    key: m.key,
    family: m.family,
    dimensions: m.dimensions,
    maxInputTokens: m.maxInputTokens,
    pinned: m.pinned,
    memoryBytes: m.memoryBytes ?? null,
    serving: m.serving ?? {},
    sources: (m.sources ?? [m.source]).map((s) => s.kind),
    status: deps.loader.status(m.key),
    measuredLoadMs: deps.loader.measuredLoadMs(m.key) ?? null,
    copies,
  };
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(bytes.byteLength),
    ...headers,
  });
  res.end(bytes);
}
