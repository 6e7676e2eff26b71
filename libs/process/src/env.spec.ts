import { describe, expect, it } from "vitest";
import { envInt, envList, envOptional, envRequired, envString } from "./env.js";

describe("environment settings", () => {
  const env = { A: "x", N: "12", L: "a, b,,c", E: "" };
  it("reads strings, integers and lists, treating empty as absent", () => {
    expect(envString(env, "A", "d")).toBe("x");
    expect(envString(env, "E", "d")).toBe("d");
    expect(envOptional(env, "E")).toBeUndefined();
    expect(envInt(env, "N")).toBe(12);
    expect(envInt(env, "MISSING")).toBeUndefined();
    expect(envList(env, "L")).toEqual(["a", "b", "c"]);
  });
  it("names the variable that is wrong", () => {
    expect(() => envInt({ SHOAL_PORT: "eighty" }, "SHOAL_PORT")).toThrow(
      /SHOAL_PORT must be an integer/,
    );
    expect(() => envRequired({}, "SHOAL_SIDECAR_BIN")).toThrow(/SHOAL_SIDECAR_BIN must be set/);
  });
});
