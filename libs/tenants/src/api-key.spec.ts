import { describe, expect, it } from "vitest";
import { digestApiKey, generateApiKey, matchesDigest, parseApiKey } from "./api-key.js";

describe("API keys", () => {
  it("are shoal_<prefix>_<secret>, unique, and parse back to their prefix", () => {
    const keys = Array.from({ length: 200 }, () => generateApiKey());
    for (const k of keys) {
      expect(k.key).toMatch(/^shoal_[a-z2-7]{8}_[A-Za-z0-9_-]{43}$/);
      expect(parseApiKey(k.key)?.prefix).toBe(k.prefix);
      expect(k.digest).toBe(digestApiKey(k.key));
    }
    expect(new Set(keys.map((k) => k.prefix)).size).toBe(200);
    expect(new Set(keys.map((k) => k.key)).size).toBe(200);
  });

  it("refuse anything not shaped like a key before any lookup", () => {
    const { key } = generateApiKey();
    for (const bad of [
      "",
      "sk-123",
      key.slice(0, -1),
      `${key}x`,
      key.replace("shoal_", "shoaL_"),
      key.replace(/^shoal_[a-z2-7]{8}/, "shoal_ABCDEFGH"),
      `shoal__${"a".repeat(43)}`,
      key.replace(/_/, " "),
    ]) {
      expect(parseApiKey(bad), bad).toBeUndefined();
    }
  });

  it("match only their own digest", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(matchesDigest(a.key, a.digest)).toBe(true);
    expect(matchesDigest(a.key, b.digest)).toBe(false);
    expect(matchesDigest(a.key, "")).toBe(false);
    expect(matchesDigest(a.key, "not hex")).toBe(false);
  });
});
