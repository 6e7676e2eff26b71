import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { smollm2Gguf, tempDir } from "@shoal/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { ggufHeader, ggufString, llamaEntries, u32, u64 } from "../test/gguf-builder.js";
import { InvalidGgufError, readGgufMetadata, type GgufLimits } from "./gguf-metadata.js";

let dir: string;
let n = 0;

beforeAll(async () => {
  dir = await tempDir("gguf");
});

async function file(bytes: Buffer): Promise<string> {
  const path = join(dir, `${n++}.gguf`);
  await writeFile(path, bytes);
  return path;
}

async function failure(bytes: Buffer, limits?: GgufLimits): Promise<string> {
  const error = await readGgufMetadata(await file(bytes), limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidGgufError);
  return (error as Error).message;
}

describe("readGgufMetadata", () => {
  it("reads SmolLM2's metadata, skipping its 49152-token vocabulary", async () => {
    const metadata = await readGgufMetadata(smollm2Gguf());
    expect(metadata.get("general.architecture")).toEqual({ type: "string", value: "llama" });
    expect(metadata.get("llama.block_count")).toEqual({ type: "int", value: 30n });
    expect(metadata.get("tokenizer.ggml.tokens")).toEqual({ type: "array", length: 49152 });
    expect(metadata.get("tokenizer.chat_template")?.type).toBe("string");
  });

  it("reads every scalar type it keeps, and version 2", async () => {
    const metadata = await readGgufMetadata(
      await file(
        ggufHeader(
          [
            { key: "a", u64: 2n ** 40n },
            { key: "b", i8: -3 },
            { key: "c", f32: 0.5 },
            { key: "d", type: 7, raw: Buffer.from([1]) },
            { key: "e", type: 12, raw: Buffer.from(new Float64Array([1.25]).buffer) },
          ],
          { version: 2 },
        ),
      ),
    );
    expect([...metadata.values()]).toEqual([
      { type: "int", value: 2n ** 40n },
      { type: "int", value: -3n },
      { type: "float", value: 0.5 },
      { type: "bool", value: true },
      { type: "float", value: 1.25 },
    ]);
  });

  it.each<[string, Buffer, string]>([
    ["another magic", ggufHeader([], { magic: "GGML" }), "bad magic"],
    ["version 1", ggufHeader([], { version: 1 }), "version 1"],
    ["a big-endian file", ggufHeader([], { version: 0x03000000 }), "is not supported"],
    ["an empty file", Buffer.alloc(0), "ends at byte 0"],
    ["more entries claimed than present", ggufHeader(llamaEntries(), { count: 11n }), "ends at"],
    ["a count past 2^53", ggufHeader([], { count: 2n ** 60n }), "implausible"],
    [
      "a string running past the end",
      Buffer.concat([ggufHeader([], { count: 1n }), u64(1000n), Buffer.from("abc")]),
      "ends at",
    ],
    [
      "an array running past the end",
      Buffer.concat([ggufHeader([], { count: 1n }), ggufString("k"), u32(9), u32(4), u64(100n)]),
      "ends at",
    ],
    [
      "an unknown value type",
      ggufHeader([{ key: "k", type: 13, raw: Buffer.alloc(8) }]),
      "unknown value type 13",
    ],
    [
      "an array of arrays",
      ggufHeader([{ key: "k", type: 9, raw: Buffer.concat([u32(9), u64(1n)]) }]),
      "arrays of type 9",
    ],
    [
      "a key that is not UTF-8",
      Buffer.concat([
        ggufHeader([], { count: 1n }),
        u64(2n),
        Buffer.from([0xff, 0xfe]),
        u32(4),
        u32(1),
      ]),
      "not valid UTF-8",
    ],
  ])("refuses %s", async (_, bytes, message) => {
    expect(await failure(bytes)).toContain(message);
  });

  it("refuses strings, arrays, entry counts and metadata over its limits", async () => {
    const long = ggufHeader([{ key: "k", string: "x".repeat(100) }]);
    expect(await failure(long, { maxStringBytes: 99 })).toContain("exceeds the limit of 99");
    const array = ggufHeader([{ key: "k", u32s: [1, 2, 3] }]);
    expect(await failure(array, { maxArrayLength: 2 })).toContain("array of 3 elements");
    expect(await failure(ggufHeader(llamaEntries()), { maxEntries: 5 })).toContain(
      "entries exceed the limit of 5",
    );
    expect(await failure(ggufHeader(llamaEntries()), { maxMetadataBytes: 100 })).toContain(
      "past the limit of 100 bytes",
    );
    // A hostile length is refused from its 8 bytes, before any allocation.
    const huge = Buffer.concat([ggufHeader([], { count: 1n }), u64(2n ** 50n)]);
    expect(await failure(huge)).toContain("exceeds the limit");
  });
});
