import { describe, expect, it } from "vitest";
import { float32View } from "./float32-rows.js";

function le(values: number[], offset = 0): Uint8Array {
  const bytes = new Uint8Array(offset + values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((v, i) => {
    view.setFloat32(offset + i * 4, v, true);
  });
  return bytes.subarray(offset);
}

describe("float32View", () => {
  it("views aligned bytes without copying", () => {
    const bytes = le([1, -0.5, 3.25]);
    const rows = float32View(bytes);
    expect(Array.from(rows)).toEqual([1, -0.5, 3.25]);
    expect(rows.buffer).toBe(bytes.buffer);
  });
  it("copies unaligned bytes once and reads the same values", () => {
    const bytes = le([0.125, 7], 1);
    const rows = float32View(bytes);
    expect(Array.from(rows)).toEqual([0.125, 7]);
    expect(rows.buffer).not.toBe(bytes.buffer);
  });
  it("refuses bytes that are not whole floats", () => {
    expect(() => float32View(new Uint8Array(6))).toThrow(RangeError);
  });
});
