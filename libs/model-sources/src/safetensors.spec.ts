import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkHeaderLength,
  encodeSafetensors,
  InvalidSafetensorsError,
  MAX_SAFETENSORS_HEADER_BYTES,
  parseSafetensors,
  parseSafetensorsHeader,
} from "./safetensors.js";

const utf8 = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const f32 = (shape: number[], begin: number) => ({
  dtype: "F32",
  shape,
  data_offsets: [begin, begin + 4 * shape.reduce((a, b) => a * b, 1)],
});

describe("parseSafetensorsHeader", () => {
  it("accepts tensors that tile the data, in any key order, with metadata", () => {
    const header = {
      b: f32([2, 3], 8),
      __metadata__: { format: "pt" },
      a: f32([2], 0),
      scalar: f32([], 32),
      empty: { dtype: "F16", shape: [0, 4], data_offsets: [36, 36] },
    };
    const parsed = parseSafetensorsHeader(utf8(header), 36);
    expect(parsed.metadata).toEqual({ format: "pt" });
    expect(parsed.tensors.map((t) => t.name)).toEqual(["b", "a", "scalar", "empty"]);
    expect(parsed.tensors[0]).toEqual({
      name: "b",
      dtype: "F32",
      shape: [2, 3],
      dataOffsets: [8, 32],
    });
  });

  it("accepts a header padded with trailing spaces, as writers align it", () => {
    const bytes = new TextEncoder().encode(`${JSON.stringify({ a: f32([1], 0) })}      `);
    expect(parseSafetensorsHeader(bytes, 4).tensors).toHaveLength(1);
  });

  it("accepts sub-byte dtypes when the bits add up to whole bytes", () => {
    const header = { q: { dtype: "F4", shape: [3, 2], data_offsets: [0, 3] } };
    expect(parseSafetensorsHeader(utf8(header), 3).tensors[0]?.dtype).toBe("F4");
  });

  it.each([
    ["invalid UTF-8", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 0, "UTF-8"],
    ["not starting with {", utf8([{ a: 1 }]), 0, "not a JSON object"],
    ["not JSON", new TextEncoder().encode("{ a: 1 }"), 0, "not valid JSON"],
    ["no tensors", utf8({ __metadata__: { format: "pt" } }), 0, "no tensors"],
    ["non-string metadata", utf8({ __metadata__: { n: 1 }, a: f32([1], 0) }), 4, "__metadata__.n"],
    ["a tensor that is not an object", utf8({ a: [1, 2] }), 0, "not an object"],
    ["an unknown dtype", utf8({ a: { ...f32([1], 0), dtype: "F128" } }), 4, "unknown dtype"],
    ["a negative dimension", utf8({ a: { ...f32([1], 0), shape: [-1] } }), 4, "shape"],
    ["a fractional dimension", utf8({ a: { ...f32([1], 0), shape: [1.5] } }), 4, "shape"],
    ["three offsets", utf8({ a: { ...f32([1], 0), data_offsets: [0, 2, 4] } }), 4, "[begin, end]"],
    ["backwards offsets", utf8({ a: { ...f32([1], 0), data_offsets: [4, 0] } }), 4, "backwards"],
    ["offsets past the data", utf8({ a: f32([4], 0) }), 8, "past the 8 data bytes"],
    [
      "a span the shape disagrees with",
      utf8({ a: { ...f32([2], 0), data_offsets: [0, 4] } }),
      4,
      "needs 8",
    ],
    ["a gap between tensors", utf8({ a: f32([1], 0), b: f32([1], 8) }), 12, "expected 4"],
    ["overlapping tensors", utf8({ a: f32([2], 0), b: f32([2], 4) }), 12, "expected 8"],
    ["trailing bytes after the tensors", utf8({ a: f32([1], 0) }), 8, "cover 4 bytes but 8"],
    [
      "a shape too large to exist",
      utf8({ a: { ...f32([1], 0), shape: [2 ** 52, 2 ** 52] } }),
      4,
      "needs",
    ],
  ])("rejects %s", (_name, bytes, dataBytes, message) => {
    expect(() => parseSafetensorsHeader(bytes, dataBytes)).toThrow(InvalidSafetensorsError);
    expect(() => parseSafetensorsHeader(bytes, dataBytes)).toThrow(message);
  });

  const dtypes = fc.constantFrom(["U8", 1], ["F16", 2], ["BF16", 2], ["F32", 4], ["I64", 8]);
  const tensors = fc.uniqueArray(
    fc.record({
      name: fc.string({ minLength: 1, maxLength: 12 }).filter((n) => n !== "__metadata__"),
      dtype: dtypes,
      shape: fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 8, selector: (t) => t.name },
  );
  const layout = (
    list: readonly { name: string; dtype: readonly [string, number]; shape: number[] }[],
  ) => {
    let offset = 0;
    const entries: [string, unknown][] = [];
    for (const { name, dtype, shape } of list) {
      const bytes = dtype[1] * shape.reduce((a, b) => a * b, 1);
      entries.push([name, { dtype: dtype[0], shape, data_offsets: [offset, offset + bytes] }]);
      offset += bytes;
    }
    // fromEntries, not assignment: a tensor named `__proto__` must be an own key, as in a file.
    return { header: Object.fromEntries(entries), dataBytes: offset };
  };

  it("reads a tensor named __proto__ as a tensor, like any other name", () => {
    const { header, dataBytes } = layout([{ name: "__proto__", dtype: ["U8", 1], shape: [] }]);
    expect(parseSafetensorsHeader(utf8(header), dataBytes).tensors.map((t) => t.name)).toEqual([
      "__proto__",
    ]);
  });

  it("round-trips any contiguous layout", () => {
    fc.assert(
      fc.property(tensors, (list) => {
        const { header, dataBytes } = layout(list);
        const parsed = parseSafetensorsHeader(utf8(header), dataBytes);
        // Sorted: JSON objects put integer-like keys first, whatever order they were written in.
        const byName = (a: unknown[], b: unknown[]) => String(a[0]).localeCompare(String(b[0]));
        expect(parsed.tensors.map((t) => [t.name, t.dtype, t.shape]).sort(byName)).toEqual(
          list.map((t) => [t.name, t.dtype[0], t.shape]).sort(byName),
        );
      }),
    );
  });

  it("rejects any layout when the data is shorter or longer than the tensors", () => {
    fc.assert(
      fc.property(
        tensors,
        fc.integer({ min: -64, max: 64 }).filter((d) => d !== 0),
        (list, delta) => {
          const { header, dataBytes } = layout(list);
          fc.pre(dataBytes + delta >= 0);
          expect(() => parseSafetensorsHeader(utf8(header), dataBytes + delta)).toThrow(
            InvalidSafetensorsError,
          );
        },
      ),
    );
  });

  it("fails on arbitrary bytes only with InvalidSafetensorsError", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(1024), (bytes, dataBytes) => {
        try {
          parseSafetensorsHeader(bytes, dataBytes);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidSafetensorsError);
        }
      }),
    );
  });
});

describe("checkHeaderLength", () => {
  it("returns a plausible length", () => {
    expect(checkHeaderLength(100n, 1000)).toBe(100);
    expect(checkHeaderLength(992n, 1000)).toBe(992);
  });

  it.each([
    ["too small to hold {}", 1n, 1000, "too small"],
    ["past the end of the file", 993n, 1000, "past the end"],
    ["over the reference limit", BigInt(MAX_SAFETENSORS_HEADER_BYTES) + 1n, 2 ** 40, "limit"],
    ["a u64 read from garbage", 0xffff_ffff_ffff_ffffn, 2 ** 40, "limit"],
  ])("rejects one %s", (_name, length, fileBytes, message) => {
    expect(() => checkHeaderLength(length, fileBytes)).toThrow(message);
  });
});

describe("encodeSafetensors and parseSafetensors", () => {
  it("round-trip tensors, metadata and bytes, with the data 8-byte aligned", () => {
    const a = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
    const b = new Uint8Array([1, 2, 3, 4]);
    const bytes = encodeSafetensors(
      [
        { name: "a", dtype: "F32", shape: [3], data: a },
        { name: "b", dtype: "F16", shape: [2, 1], data: b },
      ],
      { format: "pt" },
    );
    const { header, dataStart } = parseSafetensors(bytes);
    expect(dataStart % 8).toBe(0);
    expect(header.metadata).toEqual({ format: "pt" });
    expect(header.tensors).toEqual([
      { name: "a", dtype: "F32", shape: [3], dataOffsets: [0, 12] },
      { name: "b", dtype: "F16", shape: [2, 1], dataOffsets: [12, 16] },
    ]);
    expect(bytes.subarray(dataStart + 12, dataStart + 16)).toEqual(Buffer.from(b));
  });

  it("parseSafetensors refuses bytes too short, or with a length past the end", () => {
    expect(() => parseSafetensors(new Uint8Array(7))).toThrow(InvalidSafetensorsError);
    const bytes = encodeSafetensors([
      { name: "a", dtype: "U8", shape: [1], data: new Uint8Array(1) },
    ]);
    expect(() => parseSafetensors(bytes.subarray(0, 20))).toThrow("past the end");
    expect(() => parseSafetensors(bytes.subarray(0, bytes.length - 1))).toThrow(
      "past the 0 data bytes",
    );
  });

  it("parseSafetensors reads from a view at any offset of a larger buffer", () => {
    const bytes = encodeSafetensors([
      { name: "a", dtype: "U8", shape: [1], data: new Uint8Array(1) },
    ]);
    const shifted = Buffer.concat([Buffer.alloc(3), bytes]).subarray(3);
    expect(parseSafetensors(shifted).header.tensors).toHaveLength(1);
  });
});
