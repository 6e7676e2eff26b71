import type { ModelEntry } from "@shoal/config";
import type { Principal } from "@shoal/tenants";
import type { Assembled } from "./pending.js";

/**
 * Per-tenant admission and usage, for calls that carry a principal: ingress supplies it
 * (quotas, usage counters), the gateway calls it at the two points every family shares.
 */
export interface TenantAccounting {
  /**
   * Admits one request of `caller`.
   *
   * @returns its release, called once when the request is over, answered or not.
   * @throws OverloadedError (429, `Retry-After`) when the tenant is over a limit.
   */
  admit(caller: Principal): () => void;
  /** What an answered request of `caller` used, in model tokens. */
  used(caller: Principal, model: ModelEntry, inputTokens: number, outputTokens: number): void;
}

/** Input tokens of a unary answer: every family's result carries them per input. */
export function answeredTokens(assembled: Assembled): number {
  let total = 0;
  for (const outcome of assembled.outcomes) {
    for (const t of outcome.value.tokens) total += t;
  }
  return total;
}
