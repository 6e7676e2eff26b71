import { describe, expect, it } from "vitest";
import { toFloat32Array } from "./float32.js";

function littleEndianBytes(values: readonly number[], offset: number): Uint8Array {
  const buffer = new ArrayBuffer(offset + values.length * 4);
  const view = new DataView(buffer);
  values.forEach((v, i) => {
    view.setFloat32(offset + i * 4, v, true);
  });
  return new Uint8Array(buffer, offset, values.length * 4);
}

describe("toFloat32Array", () => {
  const values = [1, -0.5, 0.25, 3.5e-8, -1e20];

  it.each([0, 1, 2, 3, 4, 7])("reads values at byte offset %i", (offset) => {
    expect(Array.from(toFloat32Array(littleEndianBytes(values, offset)))).toEqual(
      values.map((v) => Math.fround(v)),
    );
  });

  it("shares memory when aligned", () => {
    const bytes = littleEndianBytes(values, 8);
    const floats = toFloat32Array(bytes);
    expect(floats.buffer).toBe(bytes.buffer);
    expect(floats.byteOffset).toBe(8);
  });

  it("copies when unaligned, leaving the source untouched", () => {
    const bytes = littleEndianBytes(values, 3);
    const floats = toFloat32Array(bytes);
    expect(floats.buffer).not.toBe(bytes.buffer);
    floats[0] = 42;
    expect(new DataView(bytes.buffer, bytes.byteOffset).getFloat32(0, true)).toBe(1);
  });

  it("accepts empty input", () => {
    expect(toFloat32Array(new Uint8Array(0))).toHaveLength(0);
  });

  it("rejects a length that is not a multiple of 4", () => {
    expect(() => toFloat32Array(new Uint8Array(6))).toThrow(RangeError);
  });
});
