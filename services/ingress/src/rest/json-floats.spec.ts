import { describe, expect, it } from "vitest";
import { JsonFloats, jsonWithFloats } from "./json-floats.js";

const bytes = (values: number[], offset = 0): Uint8Array => {
  const buffer = new Uint8Array(offset + values.length * 4);
  const view = new DataView(buffer.buffer);
  values.forEach((v, i) => {
    view.setFloat32(offset + i * 4, v, true);
  });
  return buffer.subarray(offset);
};

const text = (body: unknown): string => jsonWithFloats(body).toString("utf8");

/** A float32 as the JSON number text reads back, the way a float32 client keeps it. */
const readBack = (json: string): number[] =>
  Array.from(new Float32Array(JSON.parse(json) as number[]));

describe("jsonWithFloats", () => {
  it("writes nine significant digits at most, without trailing zeros", () => {
    expect(text(new JsonFloats(bytes([0.1, -0.25, 7, 100, 0.5, 123456.7, 1e9])))).toBe(
      "[0.100000001,-0.25,7,100,0.5,123456.703,1e9]",
    );
    expect(text(new JsonFloats(bytes([1e-7, 3.4e38, -2.5e-3, 1e-45, 1.17549435e-38])))).toBe(
      "[1.00000001e-7,3.39999995e38,-0.00249999994,1.40129846e-45,1.17549435e-38]",
    );
  });

  it("reads back to exactly the same float32 values, across float32's whole range", () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const values = Array.from({ length: 20_000 }, (_, i) => {
      const magnitude = 10 ** (Math.floor(random() * 80) - 42);
      return (i % 2 === 0 ? 1 : -1) * random() * magnitude;
    });
    // Powers of ten and their float32 neighbours, where log10 and rounding are most fragile.
    for (let k = -38; k <= 38; k++) values.push(10 ** k, Math.fround(10 ** k) * (1 - 2 ** -23));
    const f32 = Array.from(new Float32Array(values));
    expect(readBack(text(new JsonFloats(bytes(values))))).toEqual(f32);
  });

  it("writes the envelope exactly as JSON.stringify does", () => {
    const body = { data: [{ embedding: new JsonFloats(bytes([1, 2])), index: 0 }], n: "é" };
    expect(text(body)).toBe('{"data":[{"embedding":[1,2],"index":0}],"n":"é"}');
  });

  it("keeps several vectors in their places and order", () => {
    const body = {
      a: new JsonFloats(bytes([1, 2])),
      b: "text",
      c: [new JsonFloats(bytes([3])), new JsonFloats(bytes([]))],
    };
    expect(text(body)).toBe('{"a":[1,2],"b":"text","c":[[3],[]]}');
  });

  it("reads values at any byte offset", () => {
    expect(text(new JsonFloats(bytes([0.5, -2], 1)))).toBe("[0.5,-2]");
  });

  it("writes zero, negative zero and non-finite values as JSON.stringify does", () => {
    expect(text([new JsonFloats(bytes([0, -0, 1, NaN, Infinity, -Infinity]))])).toBe(
      "[[0,0,1,null,null,null]]",
    );
  });

  it("leaves a body without vectors, and text that looks like the stand-in, alone", () => {
    const body = { s: "\u0000shoal-float\u0000", n: [1, 2] };
    expect(text(body)).toBe(JSON.stringify(body));
  });
});
