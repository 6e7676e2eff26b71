import { open, type FileHandle } from "node:fs/promises";

// The GGUF layout (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic "GGUF",
// a u32 version, u64 tensor count, u64 metadata count, then that many key/value pairs read in
// order (a key is a u64-length string; a value is a u32 type tag and the value). v1 used u32
// counts and lengths and is long obsolete; v2 and v3 (big-endian-aware) share this layout.
// Everything here is little-endian: a big-endian file shows up as an absurd version.

/** A metadata value this reader keeps. Arrays (the tokenizer's) are skipped, only counted. */
export type GgufValue =
  | { readonly type: "int"; readonly value: bigint }
  | { readonly type: "float"; readonly value: number }
  | { readonly type: "bool"; readonly value: boolean }
  | { readonly type: "string"; readonly value: string }
  | { readonly type: "array"; readonly length: number };

/** Bounds on what a hostile or broken file can make the reader do. */
export interface GgufLimits {
  /** Longest key or string value, bytes. @default 4 MiB (chat templates run to tens of KiB) */
  readonly maxStringBytes?: number;
  /** Most elements of one array. @default 16,777,216 (vocabularies reach a few 100k) */
  readonly maxArrayLength?: number;
  /** Most key/value pairs. @default 65,536 */
  readonly maxEntries?: number;
  /** Bytes of metadata read in all, from the start of the file. @default 256 MiB */
  readonly maxMetadataBytes?: number;
}

/** A GGUF file that is malformed or over a limit; the message says which and where. */
export class InvalidGgufError extends Error {
  override readonly name = "InvalidGgufError";
}

const DEFAULT_LIMITS: Required<GgufLimits> = {
  maxStringBytes: 4 * 1024 * 1024,
  maxArrayLength: 16 * 1024 * 1024,
  maxEntries: 65_536,
  maxMetadataBytes: 256 * 1024 * 1024,
};

// Value type tags, and the byte width of the fixed-size ones.
const STRING = 8;
const ARRAY = 9;
const FIXED_WIDTH: ReadonlyMap<number, number> = new Map([
  [0, 1], // u8
  [1, 1], // i8
  [2, 2], // u16
  [3, 2], // i16
  [4, 4], // u32
  [5, 4], // i32
  [6, 4], // f32
  [7, 1], // bool
  [10, 8], // u64
  [11, 8], // i64
  [12, 8], // f64
]);

/**
 * Reads the metadata key/value pairs of a GGUF file, sequentially and within `limits`, without
 * touching the tensor data. Array values are walked (their strings have lengths to skip) but
 * not kept.
 *
 * @throws InvalidGgufError when the file is not GGUF v2/v3, is truncated, or breaks a limit.
 */
export async function readGgufMetadata(
  path: string,
  limits: GgufLimits = {},
): Promise<ReadonlyMap<string, GgufValue>> {
  const bounds = { ...DEFAULT_LIMITS, ...limits };
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const cursor = new Cursor(handle, size, bounds.maxMetadataBytes);
    const magic = await cursor.bytes(4);
    if (magic.toString("latin1") !== "GGUF")
      throw new InvalidGgufError("not a GGUF file (bad magic)");
    const version = (await cursor.bytes(4)).readUInt32LE(0);
    if (version !== 2 && version !== 3) {
      throw new InvalidGgufError(
        `GGUF version ${version} is not supported (2 or 3, little-endian)`,
      );
    }
    await cursor.u64("tensor count");
    const count = await cursor.u64("metadata count");
    if (count > bounds.maxEntries) {
      throw new InvalidGgufError(
        `${count} metadata entries exceed the limit of ${bounds.maxEntries}`,
      );
    }
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < count; i++) {
      const key = await cursor.string(bounds.maxStringBytes, `key of metadata entry ${i}`);
      const type = await cursor.u32();
      metadata.set(key, await readValue(cursor, type, key, bounds));
    }
    return metadata;
  } finally {
    await handle.close();
  }
}

async function readValue(
  cursor: Cursor,
  type: number,
  key: string,
  bounds: Required<GgufLimits>,
): Promise<GgufValue> {
  if (type === STRING) {
    return { type: "string", value: await cursor.string(bounds.maxStringBytes, key) };
  }
  if (type === ARRAY) {
    const elementType = await cursor.u32();
    const length = await cursor.u64(`${key} length`);
    if (length > bounds.maxArrayLength) {
      throw new InvalidGgufError(
        `${key}: array of ${length} elements exceeds the limit of ${bounds.maxArrayLength}`,
      );
    }
    if (elementType === STRING) {
      for (let i = 0; i < length; i++) await cursor.skipString(bounds.maxStringBytes, key);
    } else {
      const width = FIXED_WIDTH.get(elementType);
      if (width === undefined) {
        throw new InvalidGgufError(`${key}: arrays of type ${elementType} are not supported`);
      }
      cursor.skip(width * length);
    }
    return { type: "array", length };
  }
  const width = FIXED_WIDTH.get(type);
  if (width === undefined) throw new InvalidGgufError(`${key}: unknown value type ${type}`);
  const bytes = await cursor.bytes(width);
  switch (type) {
    case 0:
      return { type: "int", value: BigInt(bytes.readUInt8(0)) };
    case 1:
      return { type: "int", value: BigInt(bytes.readInt8(0)) };
    case 2:
      return { type: "int", value: BigInt(bytes.readUInt16LE(0)) };
    case 3:
      return { type: "int", value: BigInt(bytes.readInt16LE(0)) };
    case 4:
      return { type: "int", value: BigInt(bytes.readUInt32LE(0)) };
    case 5:
      return { type: "int", value: BigInt(bytes.readInt32LE(0)) };
    case 6:
      return { type: "float", value: bytes.readFloatLE(0) };
    case 7:
      return { type: "bool", value: bytes.readUInt8(0) !== 0 };
    case 10:
      return { type: "int", value: bytes.readBigUInt64LE(0) };
    case 11:
      return { type: "int", value: bytes.readBigInt64LE(0) };
    default:
      return { type: "float", value: bytes.readDoubleLE(0) };
  }
}

/** Reads a file front to back through a window, refusing to go past `limit` bytes. */
class Cursor {
  static readonly #WINDOW = 1024 * 1024;
  readonly #handle: FileHandle;
  readonly #size: number;
  readonly #limit: number;
  #window = Buffer.alloc(0);
  /** File offset of `#window[0]`. */
  #windowStart = 0;
  /** File offset of the next byte to hand out. */
  #position = 0;

  constructor(handle: FileHandle, size: number, limit: number) {
    this.#handle = handle;
    this.#size = size;
    this.#limit = limit;
  }

  async bytes(length: number): Promise<Buffer> {
    await this.#ensure(length);
    const start = this.#position - this.#windowStart;
    this.#position += length;
    return this.#window.subarray(start, start + length);
  }

  async u32(): Promise<number> {
    return (await this.bytes(4)).readUInt32LE(0);
  }

  /** A u64 count, which must fit a double exactly (any real one does, by far). */
  async u64(what: string): Promise<number> {
    const value = (await this.bytes(8)).readBigUInt64LE(0);
    if (value > BigInt(Number.MAX_SAFE_INTEGER))
      throw new InvalidGgufError(`${what} ${value} is implausible`);
    return Number(value);
  }

  async string(maxBytes: number, what: string): Promise<string> {
    const length = await this.#stringLength(maxBytes, what);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(await this.bytes(length));
    } catch (error) {
      if (error instanceof InvalidGgufError) throw error;
      throw new InvalidGgufError(`${what}: string is not valid UTF-8`);
    }
  }

  async skipString(maxBytes: number, what: string): Promise<void> {
    this.skip(await this.#stringLength(maxBytes, what));
  }

  skip(length: number): void {
    this.#checkLimit(length);
    const buffered = this.#windowStart + this.#window.length - this.#position;
    if (length <= buffered) {
      this.#position += length;
      return;
    }
    if (this.#position + length > this.#size) {
      throw new InvalidGgufError(`file ends at byte ${this.#size}, inside its metadata`);
    }
    this.#position += length;
    this.#window = Buffer.alloc(0);
    this.#windowStart = this.#position;
  }

  async #stringLength(maxBytes: number, what: string): Promise<number> {
    const length = await this.u64(`${what}: string length`);
    if (length > maxBytes) {
      throw new InvalidGgufError(
        `${what}: string of ${length} bytes exceeds the limit of ${maxBytes}`,
      );
    }
    return length;
  }

  #checkLimit(length: number): void {
    if (this.#position + length > this.#limit) {
      throw new InvalidGgufError(`metadata runs past the limit of ${this.#limit} bytes`);
    }
  }

  async #ensure(length: number): Promise<void> {
    this.#checkLimit(length);
    const available = this.#windowStart + this.#window.length - this.#position;
    if (length <= available) return;
    const keep = this.#window.subarray(this.#position - this.#windowStart);
    const fresh = Buffer.alloc(Math.max(length, Cursor.#WINDOW));
    keep.copy(fresh);
    let filled = keep.length;
    while (filled < length) {
      const { bytesRead } = await this.#handle.read(
        fresh,
        filled,
        fresh.length - filled,
        this.#position + filled,
      );
      if (bytesRead === 0) {
        throw new InvalidGgufError(
          `file ends at byte ${this.#position + filled}, inside its metadata`,
        );
      }
      filled += bytesRead;
    }
    this.#window = fresh.subarray(0, filled);
    this.#windowStart = this.#position;
  }
}
