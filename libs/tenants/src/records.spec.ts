import { describe, expect, it } from "vitest";
import { decodeKey, decodeTenant, encodeRecord, isTenantName, RecordError } from "./records.js";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("records", () => {
  it("round-trip tenants and keys", () => {
    const tenant = {
      name: "acme-2",
      grants: { models: ["*"], admin: ["usage" as const] },
      createdAt: "2026-12-06T00:00:00Z",
    };
    expect(decodeTenant(encodeRecord(tenant))).toEqual(tenant);
    const key = {
      prefix: "abcdefg2",
      tenant: "acme-2",
      digest: "a".repeat(64),
      label: "ci",
      createdAt: "2026-12-06T00:00:00Z",
      revokedAt: "2026-12-06T01:00:00Z",
    };
    expect(decodeKey(encodeRecord(key))).toEqual(key);
  });

  it("refuse malformed records instead of guessing", () => {
    const good = {
      prefix: "abcdefg2",
      tenant: "a",
      digest: "a".repeat(64),
      label: "",
      createdAt: "x",
    };
    for (const bad of [
      "not json",
      [],
      null,
      { ...good, prefix: "ABCDEFGH" },
      { ...good, digest: "short" },
      { ...good, tenant: "Upper" },
      { ...good, revokedAt: 5 },
    ]) {
      const raw = typeof bad === "string" ? new TextEncoder().encode(bad) : bytes(bad);
      expect(() => decodeKey(raw), JSON.stringify(bad)).toThrow(RecordError);
    }
    for (const grants of [
      undefined,
      { models: "*", admin: [] },
      { models: ["*"], admin: ["root"] },
    ]) {
      expect(() => decodeTenant(bytes({ name: "a", grants, createdAt: "x" }))).toThrow(RecordError);
    }
  });

  it("name tenants with lower-case letters, digits and dashes only", () => {
    expect(["a", "acme", "team-7", "0day"].every(isTenantName)).toBe(true);
    expect(["", "-a", "Acme", "a.b", "a b", "a".repeat(64), "a>b"].some(isTenantName)).toBe(false);
  });
});
