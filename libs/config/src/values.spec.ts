import { describe, expect, it } from "vitest";
import { intInRange, parseIntSetting } from "./values.js";

describe("settings", () => {
  it("parses integers and leaves absent ones undefined", () => {
    expect(parseIntSetting("X", " 42 ")).toBe(42);
    expect(parseIntSetting("X", undefined)).toBeUndefined();
    expect(parseIntSetting("X", "")).toBeUndefined();
  });
  it.each(["4.5", "ten", "1e3"])("rejects %s naming the setting", (raw) => {
    expect(() => parseIntSetting("SHOAL_X", raw)).toThrow(/SHOAL_X must be an integer/);
  });
  it("checks ranges", () => {
    expect(intInRange("n", 3, 1, 5)).toBe(3);
    expect(() => intInRange("n", 0, 1, 5)).toThrow(/n must be an integer in \[1, 5\]/);
  });
});
