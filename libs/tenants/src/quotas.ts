import type { TenantLimits } from "./limits.js";

/** A request over its tenant's limits; answered 429 with `Retry-After`. */
export class QuotaExceededError extends Error {
  override readonly name = "QuotaExceededError";
  constructor(
    message: string,
    readonly tenant: string,
    /** Which limit: for the metric's label and the audit line. */
    readonly limit: "requests" | "tokens" | "concurrency",
    /** Seconds until a retry can be admitted, at least 1. */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

interface Bucket {
  /** Requests that may start now; refilled at `requestsPerSecond` up to one second's worth. */
  requests: number;
  /** Token allowance; goes negative (debt) when answers use more than was left. */
  tokens: number;
  /** When the two were last refilled, ms. */
  at: number;
  inFlight: number;
}

/**
 * Per-tenant admission by token buckets and a concurrency cap, in one process. A tenant that
 * floods is refused at the door, before its requests reach the queue, so the queue — and every
 * other tenant's latency — sees at most its quota. Requests are charged when admitted; tokens
 * when the answer says how many there were, which may leave the tenant in debt that refuses
 * its next requests until the rate has paid it back.
 */
export class TenantQuotas {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;

  /** @param now milliseconds on a monotonic clock (tests pass their own). */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /**
   * Admits one request of `tenant`, or throws.
   *
   * @returns its release: call once when the request is over, answered or not.
   * @throws QuotaExceededError
   */
  admit(tenant: string, limits: TenantLimits): () => void {
    const bucket = this.#refilled(tenant, limits);
    if (limits.maxConcurrent !== undefined && bucket.inFlight >= limits.maxConcurrent) {
      throw new QuotaExceededError(
        `tenant ${tenant} has ${bucket.inFlight} requests in flight, its limit`,
        tenant,
        "concurrency",
        1,
      );
    }
    const rps = limits.requestsPerSecond;
    if (rps !== undefined && bucket.requests < 1) {
      throw new QuotaExceededError(
        `tenant ${tenant} is over its ${rps} requests/s`,
        tenant,
        "requests",
        Math.max(1, Math.ceil((1 - bucket.requests) / rps)),
      );
    }
    const tps = limits.tokensPerSecond;
    if (tps !== undefined && bucket.tokens < 0) {
      throw new QuotaExceededError(
        `tenant ${tenant} is over its ${tps} tokens/s`,
        tenant,
        "tokens",
        Math.max(1, Math.ceil(-bucket.tokens / tps)),
      );
    }
    if (rps !== undefined) bucket.requests -= 1;
    bucket.inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      bucket.inFlight -= 1;
    };
  }

  /** Charges `tokens` an answer used to `tenant`'s token bucket. */
  charge(tenant: string, limits: TenantLimits, tokens: number): void {
    if (limits.tokensPerSecond === undefined || tokens <= 0) return;
    this.#refilled(tenant, limits).tokens -= tokens;
  }

  /** Requests `tenant` has in flight here. */
  inFlight(tenant: string): number {
    return this.#buckets.get(tenant)?.inFlight ?? 0;
  }

  #refilled(tenant: string, limits: TenantLimits): Bucket {
    const now = this.#now();
    const rps = limits.requestsPerSecond ?? 0;
    const tps = limits.tokensPerSecond ?? 0;
    let bucket = this.#buckets.get(tenant);
    if (bucket === undefined) {
      bucket = { requests: Math.max(1, rps), tokens: tps, at: now, inFlight: 0 };
      this.#buckets.set(tenant, bucket);
      return bucket;
    }
    const seconds = Math.max(0, now - bucket.at) / 1000;
    bucket.at = now;
    // One second's worth is the burst: a quiet tenant does not bank an unbounded allowance.
    bucket.requests = Math.min(Math.max(1, rps), bucket.requests + seconds * rps);
    bucket.tokens = Math.min(tps, bucket.tokens + seconds * tps);
    return bucket;
  }
}
