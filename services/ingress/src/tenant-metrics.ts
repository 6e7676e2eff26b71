import { Counter, type Registry } from "prom-client";

/**
 * Per-tenant counters. `tenant` is a tenant name from the store, a set the operator controls;
 * `model` a catalog id, so the series stay bounded by tenants × models.
 */
export class TenantMetrics {
  readonly #tokens: Counter<"tenant" | "model" | "direction">;
  readonly #requests: Counter<"tenant" | "model">;
  readonly #throttled: Counter<"tenant" | "limit">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#tokens = new Counter({
      name: "shoal_tenant_tokens_total",
      help: "Model tokens answered requests used, by tenant, model and direction (input, output).",
      labelNames: ["tenant", "model", "direction"],
      registers,
    });
    this.#requests = new Counter({
      name: "shoal_tenant_requests_total",
      help: "Requests answered, by tenant and model.",
      labelNames: ["tenant", "model"],
      registers,
    });
    this.#throttled = new Counter({
      name: "shoal_tenant_throttled_total",
      help: "Requests refused 429 for their tenant's limits, by limit (requests, tokens, concurrency).",
      labelNames: ["tenant", "limit"],
      registers,
    });
  }

  used(tenant: string, model: string, inputTokens: number, outputTokens: number): void {
    this.#requests.inc({ tenant, model });
    if (inputTokens > 0) this.#tokens.inc({ tenant, model, direction: "input" }, inputTokens);
    if (outputTokens > 0) this.#tokens.inc({ tenant, model, direction: "output" }, outputTokens);
  }

  throttled(tenant: string, limit: string): void {
    this.#throttled.inc({ tenant, limit });
  }
}
