import { describe, expect, it } from "vitest";
import { JsonFloats, stringifyWithFloats } from "./json-floats.js";

const bytes = (values: number[], offset = 0): Uint8Array => {
  const buffer = new Uint8Array(offset + values.length * 4);
  const view = new DataView(buffer.buffer);
  values.forEach((v, i) => {
    view.setFloat32(offset + i * 4, v, true);
  });
  return buffer.subarray(offset);
};

describe("stringifyWithFloats", () => {
  it("writes exactly what JSON.stringify writes for the same values as numbers", () => {
    const values = [0.1, -0.25, 1e-8, 3.4e38, -0, 0.123456789];
    const f32 = Array.from(new Float32Array(values));
    const body = { data: [{ embedding: new JsonFloats(bytes(values)), index: 0 }], n: 1 };
    expect(stringifyWithFloats(body)).toBe(
      JSON.stringify({ data: [{ embedding: f32, index: 0 }], n: 1 }),
    );
  });

  it("keeps several vectors in their places and order", () => {
    const body = {
      a: new JsonFloats(bytes([1, 2])),
      b: "text",
      c: [new JsonFloats(bytes([3])), new JsonFloats(bytes([]))],
    };
    expect(stringifyWithFloats(body)).toBe('{"a":[1,2],"b":"text","c":[[3],[]]}');
  });

  it("reads values at any byte offset", () => {
    expect(stringifyWithFloats(new JsonFloats(bytes([0.5, -2], 1)))).toBe("[0.5,-2]");
  });

  it("writes non-finite values as null, as JSON.stringify does", () => {
    expect(stringifyWithFloats([new JsonFloats(bytes([1, NaN, Infinity]))])).toBe(
      "[[1,null,null]]",
    );
  });

  it("leaves a body without vectors, and text that looks like the stand-in, alone", () => {
    const body = { s: "\u0000shoal-float\u0000", n: [1, 2] };
    expect(stringifyWithFloats(body)).toBe(JSON.stringify(body));
  });
});
