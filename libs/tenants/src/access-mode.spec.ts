import { describe, expect, it } from "vitest";
import { accessMode, isLoopback } from "./access-mode.js";

describe("accessMode", () => {
  it("is open on loopback unless keys are asked for", () => {
    expect(accessMode("ingress", "127.0.0.1", undefined)).toBe("open");
    expect(accessMode("ingress", "::1", undefined)).toBe("open");
    expect(accessMode("ingress", "localhost", undefined)).toBe("open");
    expect(accessMode("ingress", "127.0.0.1", "keys")).toBe("keys");
  });

  it("refuses a network address without a setting, naming both ways out", () => {
    expect(() => accessMode("ingress", "0.0.0.0", undefined)).toThrow(
      /SHOAL_AUTH=keys.*SHOAL_AUTH=none/,
    );
    expect(() => accessMode("ingress", "10.0.0.7", undefined)).toThrow(/10\.0\.0\.7/);
    expect(() => accessMode("ingress", "::", undefined)).toThrow(/without API keys/);
  });

  it("serves a network address with keys, or openly when told so explicitly", () => {
    expect(accessMode("ingress", "0.0.0.0", "keys")).toBe("keys");
    expect(accessMode("ingress", "0.0.0.0", "none")).toBe("open");
  });

  it("refuses an unknown setting rather than guessing", () => {
    expect(() => accessMode("ingress", "127.0.0.1", "yes")).toThrow(/keys or none/);
    expect(() => accessMode("ingress", "127.0.0.1", "")).toThrow(/keys or none/);
  });
});

describe("isLoopback", () => {
  it("knows 127/8 and ::1 and nothing else", () => {
    expect(isLoopback("127.8.9.10")).toBe(true);
    expect(isLoopback("128.0.0.1")).toBe(false);
    expect(isLoopback("127.example.com")).toBe(false);
    expect(isLoopback("")).toBe(false);
  });
});
