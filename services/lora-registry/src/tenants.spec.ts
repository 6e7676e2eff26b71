import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "@shoal/config";
import { tempDir } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { UnauthenticatedError } from "./errors.js";
import { compileTenantTokens, DEFAULT_TENANT, loadTenantTokens, Tenants } from "./tenants.js";

const TOKENS = { "tok-acme-1": "acme", "tok-acme-2": "acme", "tok-globex": "globex" };

describe("Tenants", () => {
  const tenants = new Tenants(TOKENS);

  it("maps each bearer token to its tenant, whatever the scheme's case", () => {
    expect(tenants.authenticate("Bearer tok-acme-1")).toBe("acme");
    expect(tenants.authenticate("bearer tok-acme-2")).toBe("acme");
    expect(tenants.authenticate("BEARER tok-globex")).toBe("globex");
    expect(tenants.multiTenant).toBe(true);
    expect(tenants.tenantCount).toBe(2);
  });

  it.each([
    [undefined, "send Authorization: Bearer <token>"],
    ["", "send Authorization: Bearer <token>"],
    ["Basic dXNlcjpwYXNz", "send Authorization: Bearer <token>"],
    ["Bearer", "send Authorization: Bearer <token>"],
    ["Bearer tok-acme-1 extra", "send Authorization: Bearer <token>"],
    ["Bearer tok-acme", "the bearer token is not valid"],
    ["Bearer tok-acme-10", "the bearer token is not valid"],
    ["Bearer TOK-ACME-1", "the bearer token is not valid"],
  ])("refuses %j", (header, message) => {
    expect(() => tenants.authenticate(header)).toThrow(new UnauthenticatedError(message));
  });

  it("acts for the default tenant when no tokens are configured, whatever is sent", () => {
    const single = new Tenants(undefined);
    expect(single.multiTenant).toBe(false);
    expect(single.authenticate(undefined)).toBe(DEFAULT_TENANT);
    expect(single.authenticate("Bearer anything")).toBe(DEFAULT_TENANT);
  });
});

describe("loadTenantTokens", () => {
  it("reads a token → tenant file", async () => {
    const path = join(await tempDir("tokens"), "tokens.json");
    await writeFile(path, JSON.stringify(TOKENS));
    expect(await loadTenantTokens(path)).toEqual(TOKENS);
  });

  it("names the file it cannot read", async () => {
    await expect(loadTenantTokens("/nonexistent/tokens.json")).rejects.toThrow(
      "tokens file /nonexistent/tokens.json: cannot read JSON",
    );
  });

  it.each<[unknown, string]>([
    [["tok"], "must be a JSON object"],
    [{}, "lists no tokens"],
    [{ "has space": "acme" }, "token #1 is not printable ASCII"],
    [{ ok: "acme", "tok-2": 7 }, "token #2 names no valid tenant"],
    [{ ok: "a tenant" }, "token #1 names no valid tenant"],
  ])("refuses %j without echoing a token", (json, message) => {
    expect(() => compileTenantTokens(json, "t.json")).toThrow(ConfigError);
    expect(() => compileTenantTokens(json, "t.json")).toThrow(message);
    try {
      compileTenantTokens(json, "t.json");
    } catch (error) {
      expect((error as Error).message).not.toContain("has space");
      expect((error as Error).message).not.toContain("tok-2");
    }
  });
});
