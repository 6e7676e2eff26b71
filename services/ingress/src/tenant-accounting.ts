import type { ModelEntry } from "@shoal/config";
import { OverloadedError, type TenantAccounting } from "@shoal/gateway";
import {
  QuotaExceededError,
  type Principal,
  type TenantQuotas,
  type UsageMeter,
} from "@shoal/tenants";
import type { Logger } from "@shoal/telemetry";
import type { TenantMetrics } from "./tenant-metrics.js";

/** One warning per tenant per this long while it is being throttled, ms. */
const THROTTLE_LOG_EVERY_MS = 10_000;

/**
 * Ingress's per-tenant admission and usage: quotas refuse a tenant over its limits with 429
 * and `Retry-After` before its request is queued; answered requests are charged to its token
 * bucket and counted in the usage bucket and the metrics.
 */
export class IngressTenantAccounting implements TenantAccounting {
  readonly #quotas: TenantQuotas;
  readonly #usage: UsageMeter;
  readonly #metrics: TenantMetrics | undefined;
  readonly #logger: Logger;
  /** Per tenant: refusals since its last warning, and when that was. */
  readonly #throttleLog = new Map<string, { refused: number; loggedAt: number }>();

  constructor(
    quotas: TenantQuotas,
    usage: UsageMeter,
    logger: Logger,
    metrics: TenantMetrics | undefined,
  ) {
    this.#quotas = quotas;
    this.#usage = usage;
    this.#logger = logger;
    this.#metrics = metrics;
  }

  admit(caller: Principal): () => void {
    try {
      return this.#quotas.admit(caller.tenant, caller.limits);
    } catch (err) {
      if (!(err instanceof QuotaExceededError)) throw err;
      this.#metrics?.throttled(caller.tenant, err.limit);
      this.#warn(caller, err);
      throw new OverloadedError(err.message, err.retryAfterSeconds);
    }
  }

  used(caller: Principal, model: ModelEntry, inputTokens: number, outputTokens: number): void {
    this.#quotas.charge(caller.tenant, caller.limits, inputTokens + outputTokens);
    this.#usage.record(caller.tenant, model.id, model.key, inputTokens, outputTokens);
    this.#metrics?.used(caller.tenant, model.id, inputTokens, outputTokens);
  }

  /** A flood must not become a flood of log lines: one warning per tenant per interval. */
  #warn(caller: Principal, err: QuotaExceededError): void {
    const now = performance.now();
    const entry = this.#throttleLog.get(caller.tenant) ?? { refused: 0, loggedAt: -Infinity };
    entry.refused += 1;
    this.#throttleLog.set(caller.tenant, entry);
    if (now - entry.loggedAt < THROTTLE_LOG_EVERY_MS) return;
    this.#logger.warn(
      {
        tenant: caller.tenant,
        key_prefix: caller.keyPrefix,
        limit: err.limit,
        refused: entry.refused,
      },
      "tenant over its limits: requests refused with 429",
    );
    entry.refused = 0;
    entry.loggedAt = now;
  }
}
