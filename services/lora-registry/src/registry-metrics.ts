import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Adapter sizes, 1 KiB to 1 GiB: rank-8 adapters of small models up to large ones. */
const BYTE_BUCKETS = [1024, 16_384, 262_144, 1_048_576, 16_777_216, 134_217_728, 1_073_741_824];

/**
 * The registry API's requests by operation and status: an operation is `upload`, `list`,
 * `get`, `delete`, `health` or `unknown` (any other path), read from the method and the path's
 * shape, so names of tenants, models and adapters never become labels.
 */
export function operationOf(method: string | undefined, path: string): string {
  if (path === "/healthz") return "health";
  if (path === "/v1/adapters") return method === "GET" ? "list" : "unknown";
  if (!/^\/v1\/adapters\/[^/]+\/[^/]+(\/versions\/[^/]+)?$/.test(path)) return "unknown";
  switch (method) {
    case "PUT":
      return "upload";
    case "GET":
      return "get";
    case "DELETE":
      return "delete";
    default:
      return "unknown";
  }
}

/** The registry's metrics: its requests, the adapters it published, uploads in progress. */
export class RegistryMetrics {
  readonly #requests: Counter<"operation" | "status">;
  readonly #adapterBytes: Histogram;

  constructor(registry: Registry, uploadsInProgress: () => number) {
    const registers = [registry];
    this.#requests = new Counter({
      name: "shoal_registry_requests_total",
      help: "Registry API requests answered, by operation (upload, list, get, delete, health, unknown) and HTTP status.",
      labelNames: ["operation", "status"],
      registers,
    });
    this.#adapterBytes = new Histogram({
      name: "shoal_registry_published_adapter_bytes",
      help: "Sizes of the adapter versions published (weights and config, as stored).",
      buckets: BYTE_BUCKETS,
      registers,
    });
    new Gauge({
      name: "shoal_registry_uploads_in_progress",
      help: "Uploads being read and validated now (bounded by SHOAL_REGISTRY_MAX_UPLOADS).",
      registers,
      collect() {
        this.set(uploadsInProgress());
      },
    });
  }

  /** A request answered with `status`. */
  answered(method: string | undefined, path: string, status: number): void {
    this.#requests.inc({ operation: operationOf(method, path), status: String(status) });
  }

  /** An adapter version of `bytes` stored. */
  published(bytes: number): void {
    this.#adapterBytes.observe(bytes);
  }
}
