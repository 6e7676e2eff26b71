import { describe, expect, it } from "vitest";
import { retryAfterMs } from "./retry-after.js";

describe("retryAfterMs", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  it.each([
    ["seconds", "3", 3000],
    ["zero", "0", 0],
    ["an HTTP date", "Thu, 01 Jan 2026 00:00:05 GMT", 5000],
    ["a date in the past", "Wed, 31 Dec 2025 23:59:00 GMT", 0],
  ])("reads %s", (_name, value, ms) => {
    expect(retryAfterMs(value, now)).toBe(ms);
  });
  it.each([null, "", "soon", "-1", "1.5"])("ignores %s", (value) => {
    expect(retryAfterMs(value, now)).toBeUndefined();
  });
});
