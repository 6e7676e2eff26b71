import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { f16BitsToNumber, f32ToF16Bits, writeHalfPrecision } from "./half-precision.js";
import { readSafetensorsHeader } from "./safetensors.js";
import { tempDir } from "@shoal/testing";

describe("f32ToF16Bits", () => {
  it.each([
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff],
    [65520, 0x7c00], // halfway to the next binade rounds up, past the largest finite half
    [1e6, 0x7c00],
    [-Infinity, 0xfc00],
    [2 ** -14, 0x0400], // the smallest normal
    [2 ** -24, 0x0001], // the smallest subnormal
    [2 ** -25, 0x0000], // half of it, a tie, rounds to even: zero
    [1.5 * 2 ** -25, 0x0001],
    [1 + 2 ** -11, 0x3c00], // a tie between 1 and the next half rounds to even (1)
    [1 + 3 * 2 ** -11, 0x3c02], // a tie between odd and even rounds up to even
    [0.1, 0x2e66],
  ])("converts %f to %s", (x, bits) => {
    expect(f32ToF16Bits(x)).toBe(bits);
  });

  it("keeps NaN a NaN", () => {
    expect(Number.isNaN(f16BitsToNumber(f32ToF16Bits(NaN)))).toBe(true);
  });

  it("gives back every half exactly", () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      if ((bits & 0x7c00) === 0x7c00 && (bits & 0x3ff) !== 0) continue;
      expect(f32ToF16Bits(f16BitsToNumber(bits))).toBe(bits);
    }
  });

  it("rounds every finite float to a nearest half", () => {
    fc.assert(
      fc.property(fc.float({ noNaN: true, min: -65504, max: 65504 }), (x) => {
        const bits = f32ToF16Bits(x);
        const got = f16BitsToNumber(bits);
        const error = Math.abs(got - x);
        // No neighbouring half is closer.
        for (const neighbour of [bits - 1, bits + 1]) {
          if (neighbour < 0 || (neighbour & 0x7fff) >= 0x7c00) continue;
          expect(error).toBeLessThanOrEqual(Math.abs(f16BitsToNumber(neighbour) - x));
        }
      }),
    );
  });
});

describe("writeHalfPrecision", () => {
  it("stores F32 tensors as F16 and keeps the rest and the metadata", async () => {
    const dir = await tempDir("half-precision");
    const source = join(dir, "in.safetensors");
    const target = join(dir, "out.safetensors");
    const weights = Buffer.alloc(12);
    [1, -0.5, 0.1].forEach((v, i) => weights.writeFloatLE(v, i * 4));
    const ids = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]);
    const header = Buffer.from(
      JSON.stringify({
        __metadata__: { format: "pt" },
        ids: { dtype: "I64", shape: [1], data_offsets: [0, 8] },
        w: { dtype: "F32", shape: [3], data_offsets: [8, 20] },
      }),
    );
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(header.length));
    await writeFile(source, Buffer.concat([length, header, ids, weights]));

    await writeHalfPrecision(source, target);

    const out = await readSafetensorsHeader(target);
    expect(out.metadata).toEqual({ format: "pt" });
    const byName = Object.fromEntries(out.tensors.map((t) => [t.name, t]));
    expect(byName["ids"]).toMatchObject({ dtype: "I64", shape: [1] });
    expect(byName["w"]).toMatchObject({ dtype: "F16", shape: [3] });
    const bytes = await readFile(target);
    const dataStart = 8 + Number(bytes.readBigUInt64LE(0));
    expect(dataStart % 8).toBe(0);
    const w = byName["w"]?.dataOffsets ?? [0, 0];
    const halves = [0, 1, 2].map((i) => bytes.readUInt16LE(dataStart + w[0] + i * 2));
    expect(halves).toEqual([0x3c00, 0xb800, 0x2e66]);
    const id = byName["ids"]?.dataOffsets ?? [0, 0];
    expect(bytes.subarray(dataStart + id[0], dataStart + id[1])).toEqual(ids);
  });
});
