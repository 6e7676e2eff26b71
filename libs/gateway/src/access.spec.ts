import { compileCatalog } from "@shoal/config";
import type { Principal } from "@shoal/tenants";
import { describe, expect, it } from "vitest";
import { ModelAccess } from "./access.js";
import {
  ModelNotFoundError,
  PermissionDeniedError,
  UnauthenticatedRequestError,
} from "./errors.js";

const catalog = compileCatalog(
  {
    models: ["emb", "gen", "secret"].map((id) => ({
      id: `org/${id}`,
      key: id,
      family: id === "gen" ? "generator" : "embedding",
      dimensions: id === "gen" ? 0 : 4,
      maxInputTokens: 8,
      source: { kind: "dir", path: `/m/${id}` },
    })),
  },
  { modelsDir: "/unused" },
);

function caller(tenant: string, models: string[]): Principal {
  return { tenant, keyPrefix: "abcdefgh", grants: { models, admin: [] }, limits: {} };
}

describe("ModelAccess", () => {
  it("refuses a call without a principal when keys are required, and allows it when open", () => {
    expect(() => ModelAccess.of(catalog, "keys", undefined)).toThrow(UnauthenticatedRequestError);
    expect(ModelAccess.of(catalog, "open", undefined).model("org/secret").id).toBe("org/secret");
  });

  it("finds granted models and refuses the others as permission denied", () => {
    const access = ModelAccess.of(catalog, "keys", caller("acme", ["org/emb", "org/gen"]));
    expect(access.model("org/emb").id).toBe("org/emb");
    expect(() => access.model("org/secret")).toThrow(PermissionDeniedError);
    expect(() => access.model("org/secret")).toThrow(/acme has no grant for model "org\/secret"/);
    expect(access.models().map((m) => m.id)).toEqual(["org/emb", "org/gen"]);
  });

  it("lists only granted models when a name is unknown", () => {
    const access = ModelAccess.of(catalog, "keys", caller("acme", ["org/emb"]));
    expect(() => access.model("nope")).toThrow(ModelNotFoundError);
    expect(() => access.model("nope")).toThrow(/available: org\/emb$/);
  });

  it("grants every model with *", () => {
    const access = ModelAccess.of(catalog, "keys", caller("acme", ["*"]));
    expect(access.models()).toHaveLength(3);
  });

  it("sees an adapter that is the tenant's own, shared with it, or public, and no other", () => {
    const access = ModelAccess.of(catalog, "keys", caller("acme", ["*"]));
    expect(access.seesAdapter({ owner: "acme" })).toBe(true);
    expect(access.seesAdapter({ owner: "beta" })).toBe(false);
    expect(access.seesAdapter({ owner: "beta", sharedWith: [] })).toBe(false);
    expect(access.seesAdapter({ owner: "beta", sharedWith: ["gamma"] })).toBe(false);
    expect(access.seesAdapter({ owner: "beta", sharedWith: ["gamma", "acme"] })).toBe(true);
    expect(access.seesAdapter({ owner: "beta", sharedWith: ["*"] })).toBe(true);
    expect(ModelAccess.open(catalog).seesAdapter({ owner: "beta" })).toBe(true);
  });
});
