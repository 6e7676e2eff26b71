import { describe, expect, it } from "vitest";
import { ConfigError } from "./errors.js";
import { compileMatryoshkaDimensions } from "./matryoshka.js";

describe("compileMatryoshkaDimensions", () => {
  it("is absent unless the catalog sets it", () => {
    expect(compileMatryoshkaDimensions(undefined, 768, "m")).toBeUndefined();
  });
  it("sorts the widths", () => {
    expect(compileMatryoshkaDimensions([256, 64, 128], 768, "m")).toEqual([64, 128, 256]);
  });
  it.each([
    ["an empty list", []],
    ["not a list", 64],
    ["a fraction", [64.5]],
    ["zero", [0]],
    ["the native width", [768]],
    ["a wider width", [1024]],
    ["a repeat", [64, 64]],
    ["a string", ["64"]],
  ])("refuses %s", (_name, raw) => {
    expect(() => compileMatryoshkaDimensions(raw, 768, "m")).toThrow(ConfigError);
  });
});
