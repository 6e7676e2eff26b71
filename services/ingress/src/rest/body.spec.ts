import { encode } from "@msgpack/msgpack";
import { InvalidArgumentError } from "@shoal/gateway";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isMsgpack, parseMsgpack } from "./body.js";

describe("isMsgpack", () => {
  it.each([
    ["application/msgpack", true],
    ["Application/MsgPack; charset=binary", true],
    ["application/x-msgpack", true],
    ["application/vnd.msgpack", true],
    ["application/json", false],
    [undefined, false],
    ["", false],
  ])("%s → %s", (type, expected) => {
    expect(isMsgpack(type)).toBe(expected);
  });
});

describe("parseMsgpack", () => {
  it("decodes a map with bytes, numbers and nesting", () => {
    const value = { model: "m", input: [[1, 2], [3]], bytes: new Uint8Array([1, 2]) };
    const decoded = parseMsgpack(Buffer.from(encode(value))) as typeof value;
    expect(decoded.input).toEqual(value.input);
    expect(Array.from(decoded.bytes)).toEqual([1, 2]);
  });

  it("turns every malformed body into a one-line InvalidArgumentError, never another error", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          parseMsgpack(Buffer.from(bytes));
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidArgumentError);
          expect((err as Error).message).not.toContain("\n");
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("refuses a length header larger than the body could hold", () => {
    const claim = Buffer.from([0xdc, 0xff, 0xff]);
    expect(() => parseMsgpack(claim)).toThrow(/malformed MessagePack/);
  });
});
