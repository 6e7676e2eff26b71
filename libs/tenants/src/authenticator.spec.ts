import { describe, expect, it } from "vitest";
import { generateApiKey } from "./api-key.js";
import { authenticate, bearerKey, UnauthenticatedError } from "./authenticator.js";
import type { KeyRecord, TenantRecord } from "./records.js";

function directory(keys: KeyRecord[], tenants: TenantRecord[]) {
  return {
    key: (prefix: string) => keys.find((k) => k.prefix === prefix),
    tenant: (name: string) => tenants.find((t) => t.name === name),
  };
}

const acme: TenantRecord = {
  name: "acme",
  grants: { models: ["m"], admin: [] },
  createdAt: "2026-12-06T00:00:00Z",
};

function issued(tenant = "acme", revokedAt?: string) {
  const made = generateApiKey();
  const record: KeyRecord = {
    prefix: made.prefix,
    tenant,
    digest: made.digest,
    label: "t",
    createdAt: "2026-12-06T00:00:00Z",
    ...(revokedAt === undefined ? {} : { revokedAt }),
  };
  return { key: made.key, record };
}

describe("authenticate", () => {
  it("returns the key's tenant, grants and prefix", () => {
    const { key, record } = issued();
    expect(authenticate(directory([record], [acme]), key)).toEqual({
      tenant: "acme",
      keyPrefix: record.prefix,
      grants: acme.grants,
      limits: {},
    });
  });

  it("refuses forged, altered, revoked and orphaned keys with the same message", () => {
    const good = issued();
    const revoked = issued("acme", "2026-12-06T01:00:00Z");
    const orphan = issued("gone");
    const dir = directory([good.record, revoked.record, orphan.record], [acme]);
    const forged = `shoal_${good.record.prefix}_${"A".repeat(43)}`;
    const altered = good.key.slice(0, -1) + (good.key.endsWith("A") ? "B" : "A");
    const cases: [string, string][] = [
      [forged, "wrong secret for the prefix"],
      [altered, "wrong secret for the prefix"],
      [revoked.key, "revoked"],
      [orphan.key, "tenant deleted"],
      [generateApiKey().key, "unknown key"],
      ["nope", "not a Shoal key"],
    ];
    for (const [bad, reason] of cases) {
      const thrown = (() => {
        try {
          authenticate(dir, bad);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(thrown, bad).toBeInstanceOf(UnauthenticatedError);
      expect((thrown as Error).message).toBe("the API key is not valid");
      // The reason is for the audit line only.
      expect((thrown as UnauthenticatedError).reason).toBe(reason);
    }
  });
});

describe("bearerKey", () => {
  it("reads Authorization: Bearer and refuses other schemes", () => {
    expect(bearerKey("Bearer abc")).toBe("abc");
    expect(bearerKey("bearer   abc ")).toBe("abc");
    for (const bad of [undefined, "", "Basic abc", "Bearer", "Bearer a b"]) {
      expect(() => bearerKey(bad), String(bad)).toThrow(UnauthenticatedError);
    }
  });
});
