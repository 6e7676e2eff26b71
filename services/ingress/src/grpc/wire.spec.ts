import { describe, expect, it } from "vitest";
import { envelope, grpcMessage, grpcTimeoutMs, unaryMessage } from "./wire.js";

describe("unaryMessage", () => {
  it("reads back what envelope wrote", () => {
    const body = envelope(new Uint8Array([1, 2, 3]));
    expect([...body]).toEqual([0, 0, 0, 0, 3, 1, 2, 3]);
    const read = unaryMessage(body);
    expect("message" in read && [...read.message]).toEqual([1, 2, 3]);
    const empty = unaryMessage(envelope(new Uint8Array()));
    expect("message" in empty && [...empty.message]).toEqual([]);
  });

  it.each([
    ["too short", Buffer.from([0, 0, 0])],
    ["compressed", Buffer.from([1, 0, 0, 0, 1, 9])],
    ["shorter than it says", Buffer.from([0, 0, 0, 0, 5, 9])],
    ["two messages", Buffer.concat([envelope(new Uint8Array([1])), envelope(new Uint8Array([2]))])],
  ])("refuses a body that is %s", (_name, body) => {
    expect(unaryMessage(body)).toHaveProperty("error");
  });
});

describe("grpcTimeoutMs", () => {
  it.each([
    ["5S", 5000],
    ["100m", 100],
    ["2M", 120_000],
    ["1H", 3_600_000],
    ["2500u", 2.5],
    ["99999999n", 99.999999],
  ])("%s is %f ms", (header, ms) => {
    expect(grpcTimeoutMs(header)).toBeCloseTo(ms, 9);
  });

  it("is undefined when absent and malformed otherwise", () => {
    expect(grpcTimeoutMs(undefined)).toBeUndefined();
    for (const bad of ["", "5", "S", "123456789S", "5s", "-1S", "1.5S"]) {
      expect(grpcTimeoutMs(bad)).toBe("malformed");
    }
  });
});

describe("grpcMessage", () => {
  it("keeps printable ASCII and percent-encodes the rest", () => {
    expect(grpcMessage('model "x" not found')).toBe('model "x" not found');
    expect(grpcMessage("50% done\nnext")).toBe("50%25 done%0Anext");
    expect(grpcMessage("ü")).toBe("%C3%BC");
  });
});
