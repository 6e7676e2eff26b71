import { describe, expect, it } from "vitest";
import { checkLimits, LimitsError } from "./limits.js";
import { QuotaExceededError, TenantQuotas } from "./quotas.js";

function clock() {
  let now = 0;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

function refusal(fn: () => unknown): QuotaExceededError {
  try {
    fn();
  } catch (err) {
    if (err instanceof QuotaExceededError) return err;
    throw err;
  }
  throw new Error("admitted; a refusal was expected");
}

describe("TenantQuotas", () => {
  it("admits a one-second burst at the request rate, then one per 1/rate", () => {
    const c = clock();
    const quotas = new TenantQuotas(c.now);
    const limits = { requestsPerSecond: 4 };
    for (let i = 0; i < 4; i++) quotas.admit("a", limits)();
    const refused = refusal(() => quotas.admit("a", limits));
    expect(refused).toMatchObject({ tenant: "a", limit: "requests", retryAfterSeconds: 1 });
    c.advance(250);
    quotas.admit("a", limits)();
    expect(() => quotas.admit("a", limits)).toThrow(QuotaExceededError);
    // A long quiet spell banks one second's worth, not more.
    c.advance(60_000);
    for (let i = 0; i < 4; i++) quotas.admit("a", limits)();
    expect(() => quotas.admit("a", limits)).toThrow(/over its 4 requests\/s/);
  });

  it("keeps tenants apart", () => {
    const quotas = new TenantQuotas(clock().now);
    quotas.admit("a", { requestsPerSecond: 1 });
    expect(() => quotas.admit("a", { requestsPerSecond: 1 })).toThrow(QuotaExceededError);
    quotas.admit("b", { requestsPerSecond: 1 });
  });

  it("caps requests in flight until they are released, once each", () => {
    const quotas = new TenantQuotas(clock().now);
    const limits = { maxConcurrent: 2 };
    const first = quotas.admit("a", limits);
    quotas.admit("a", limits);
    expect(refusal(() => quotas.admit("a", limits)).limit).toBe("concurrency");
    first();
    first();
    expect(quotas.inFlight("a")).toBe(1);
    quotas.admit("a", limits);
    expect(() => quotas.admit("a", limits)).toThrow(QuotaExceededError);
  });

  it("refuses a tenant in token debt until the rate has paid it back", () => {
    const c = clock();
    const quotas = new TenantQuotas(c.now);
    const limits = { tokensPerSecond: 100 };
    quotas.admit("a", limits)();
    // One answer used 350 tokens with 100 in the bucket: 250 of debt, 2.5 s at 100/s.
    quotas.charge("a", limits, 350);
    const refused = refusal(() => quotas.admit("a", limits));
    expect(refused).toMatchObject({ limit: "tokens", retryAfterSeconds: 3 });
    c.advance(2000);
    expect(() => quotas.admit("a", limits)).toThrow(QuotaExceededError);
    c.advance(600);
    quotas.admit("a", limits)();
  });

  it("admits everything without limits", () => {
    const quotas = new TenantQuotas(clock().now);
    for (let i = 0; i < 1000; i++) quotas.admit("a", {});
    quotas.charge("a", {}, 1e9);
    quotas.admit("a", {});
    expect(quotas.inFlight("a")).toBe(1001);
  });
});

describe("checkLimits", () => {
  it("takes positive numbers for known fields", () => {
    expect(checkLimits({ requestsPerSecond: 0.5, maxConcurrent: 4 })).toEqual({
      requestsPerSecond: 0.5,
      maxConcurrent: 4,
    });
    expect(checkLimits(undefined)).toEqual({});
  });

  it.each([
    [{ requestsPerSecond: 0 }, /positive/],
    [{ tokensPerSecond: -1 }, /positive/],
    [{ requestsPerSecond: "5" }, /positive/],
    [{ tokensPerSecond: Infinity }, /positive/],
    [{ maxConcurrent: 1.5 }, /whole number/],
    [{ rps: 5 }, /not a limit/],
    [[], /object/],
  ])("refuses %j", (value, message) => {
    expect(() => checkLimits(value)).toThrow(LimitsError);
    expect(() => checkLimits(value)).toThrow(message);
  });
});
