import { open, type FileHandle } from "node:fs/promises";

// The safetensors layout (https://github.com/huggingface/safetensors#format): an 8-byte
// little-endian header length N, N bytes of JSON describing every tensor, then the tensor bytes.
// Checking the header is cheap (the tensor bytes are never read) and catches what a truncated
// download, an HTML error page saved as weights or a hostile file would look like.

/** The safetensors reference implementation refuses headers above this size. */
export const MAX_SAFETENSORS_HEADER_BYTES = 100_000_000;

/** Bits per element of every dtype the format defines. */
const DTYPE_BITS: ReadonlyMap<string, number> = new Map([
  ["BOOL", 8],
  ["F4", 4],
  ["F6_E2M3", 6],
  ["F6_E3M2", 6],
  ["U8", 8],
  ["I8", 8],
  ["F8_E5M2", 8],
  ["F8_E4M3", 8],
  ["F8_E8M0", 8],
  ["I16", 16],
  ["U16", 16],
  ["F16", 16],
  ["BF16", 16],
  ["I32", 32],
  ["U32", 32],
  ["F32", 32],
  ["C64", 64],
  ["I64", 64],
  ["U64", 64],
  ["F64", 64],
]);

/** One tensor as the header describes it; offsets are relative to the start of the data. */
export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly dataOffsets: readonly [begin: number, end: number];
}

export interface SafetensorsHeader {
  readonly tensors: readonly SafetensorsTensor[];
  /** The optional `__metadata__` string map (e.g. `{ format: "pt" }`). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** A safetensors file that is malformed; the message says what is wrong with it. */
export class InvalidSafetensorsError extends Error {
  override readonly name = "InvalidSafetensorsError";
}

/**
 * Reads and validates the header of a safetensors file without reading the tensor data.
 *
 * @throws InvalidSafetensorsError when the file is not well-formed safetensors.
 */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    if (size < 8) throw new InvalidSafetensorsError(`file is ${size} bytes, shorter than 8`);
    const prefix = Buffer.alloc(8);
    await readExactly(handle, prefix, 0);
    const headerBytes = checkHeaderLength(prefix.readBigUInt64LE(0), size);
    const header = Buffer.alloc(headerBytes);
    await readExactly(handle, header, 8);
    return parseSafetensorsHeader(header, size - 8 - headerBytes);
  } finally {
    await handle.close();
  }
}

/** A safetensors file held in memory: its header, and where the tensor data starts. */
export interface ParsedSafetensors {
  readonly header: SafetensorsHeader;
  /** Offset of the data in the bytes: tensor offsets are relative to it. */
  readonly dataStart: number;
}

/**
 * Validates a whole safetensors file held in memory (an upload) the way
 * {@link readSafetensorsHeader} validates one on disk.
 *
 * @throws InvalidSafetensorsError when the bytes are not well-formed safetensors.
 */
export function parseSafetensors(bytes: Uint8Array): ParsedSafetensors {
  if (bytes.byteLength < 8) {
    throw new InvalidSafetensorsError(`file is ${bytes.byteLength} bytes, shorter than 8`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerBytes = checkHeaderLength(view.getBigUint64(0, true), bytes.byteLength);
  const dataStart = 8 + headerBytes;
  const header = parseSafetensorsHeader(bytes.subarray(8, dataStart), bytes.byteLength - dataStart);
  return { header, dataStart };
}

/** A tensor to write: its bytes are already in `dtype`'s little-endian layout. */
export interface SafetensorsInput {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

/**
 * Encodes tensors as a safetensors file, in the order given, with the header padded with
 * spaces so the data starts 8-byte aligned, as the reference writer does. Shapes and dtypes
 * are not checked here: tests write malformed files through this on purpose.
 */
export function encodeSafetensors(
  tensors: readonly SafetensorsInput[],
  metadata: Readonly<Record<string, string>> = {},
): Buffer {
  const json: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const tensor of tensors) {
    json[tensor.name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + tensor.data.byteLength],
    };
    offset += tensor.data.byteLength;
  }
  const text = Buffer.from(JSON.stringify(json), "utf8");
  const padded = Buffer.concat([text, Buffer.alloc((8 - (text.length % 8)) % 8, 0x20)]);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(padded.length));
  return Buffer.concat([length, padded, ...tensors.map((t) => t.data)]);
}

/**
 * Checks a header length read from a file of `fileBytes` bytes, returning it as a number.
 *
 * @throws InvalidSafetensorsError when it is implausible or runs past the end of the file.
 */
export function checkHeaderLength(length: bigint, fileBytes: number): number {
  if (length < 2n) throw new InvalidSafetensorsError(`header length ${length} is too small`);
  if (length > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
    throw new InvalidSafetensorsError(
      `header length ${length} exceeds the ${MAX_SAFETENSORS_HEADER_BYTES}-byte limit`,
    );
  }
  if (8n + length > BigInt(fileBytes)) {
    throw new InvalidSafetensorsError(
      `header length ${length} runs past the end of a ${fileBytes}-byte file`,
    );
  }
  return Number(length);
}

/**
 * Validates a header's JSON against the tensor data that follows it: every tensor has a known
 * dtype, a shape of non-negative integers and offsets whose span matches that shape, and the
 * tensors tile the data exactly, with no gap, overlap or trailing bytes (as the reference
 * implementation requires).
 *
 * @param header the N header bytes, without the 8-byte length prefix.
 * @param dataBytes how many bytes follow the header in the file.
 * @throws InvalidSafetensorsError when any of that does not hold.
 */
export function parseSafetensorsHeader(header: Uint8Array, dataBytes: number): SafetensorsHeader {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(header);
  } catch {
    throw new InvalidSafetensorsError("header is not valid UTF-8");
  }
  if (!text.startsWith("{")) throw new InvalidSafetensorsError("header is not a JSON object");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new InvalidSafetensorsError("header is not valid JSON");
  }
  if (!isRecord(json)) throw new InvalidSafetensorsError("header is not a JSON object");

  let metadata: Record<string, string> = {};
  const tensors: SafetensorsTensor[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (name === "__metadata__") {
      metadata = parseMetadata(value);
    } else {
      tensors.push(parseTensor(name, value, dataBytes));
    }
  }
  if (tensors.length === 0) throw new InvalidSafetensorsError("header lists no tensors");

  // By (begin, end), as the reference does: an empty tensor may share its offset with the next.
  const sorted = [...tensors].sort(
    (a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1],
  );
  let expected = 0;
  for (const tensor of sorted) {
    if (tensor.dataOffsets[0] !== expected) {
      throw new InvalidSafetensorsError(
        `tensor ${tensor.name} starts at ${tensor.dataOffsets[0]}, expected ${expected} ` +
          "(tensors overlap or leave a gap)",
      );
    }
    expected = tensor.dataOffsets[1];
  }
  if (expected !== dataBytes) {
    throw new InvalidSafetensorsError(
      `tensors cover ${expected} bytes but ${dataBytes} bytes follow the header`,
    );
  }
  return { tensors, metadata };
}

function parseMetadata(value: unknown): Record<string, string> {
  if (!isRecord(value)) throw new InvalidSafetensorsError("__metadata__ is not an object");
  const metadata: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") {
      throw new InvalidSafetensorsError(`__metadata__.${key} is not a string`);
    }
    metadata[key] = entry;
  }
  return metadata;
}

function parseTensor(name: string, value: unknown, dataBytes: number): SafetensorsTensor {
  if (!isRecord(value)) throw new InvalidSafetensorsError(`tensor ${name} is not an object`);
  const { dtype, shape, data_offsets: offsets } = value;
  const bits = typeof dtype === "string" ? DTYPE_BITS.get(dtype) : undefined;
  if (typeof dtype !== "string" || bits === undefined) {
    throw new InvalidSafetensorsError(`tensor ${name} has unknown dtype ${JSON.stringify(dtype)}`);
  }
  if (!Array.isArray(shape) || !shape.every(isNonNegativeInteger)) {
    throw new InvalidSafetensorsError(`tensor ${name} shape is not a list of integers ≥ 0`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegativeInteger)) {
    throw new InvalidSafetensorsError(`tensor ${name} data_offsets is not [begin, end]`);
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end) {
    throw new InvalidSafetensorsError(
      `tensor ${name} data_offsets [${begin}, ${end}] run backwards`,
    );
  }
  if (end > dataBytes) {
    throw new InvalidSafetensorsError(
      `tensor ${name} ends at ${end}, past the ${dataBytes} data bytes in the file`,
    );
  }
  // BigInt: a hostile shape can overflow a double long before it is rejected for its size.
  const elementBits = shape.reduce((total: bigint, dim: number) => total * BigInt(dim), 1n);
  const totalBits = elementBits * BigInt(bits);
  if (totalBits % 8n !== 0n || totalBits / 8n !== BigInt(end - begin)) {
    throw new InvalidSafetensorsError(
      `tensor ${name} spans ${end - begin} bytes but ${dtype}${JSON.stringify(shape)} ` +
        `needs ${totalBits / 8n}`,
    );
  }
  return { name, dtype, shape, dataOffsets: [begin, end] };
}

async function readExactly(handle: FileHandle, buffer: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buffer.length) {
    const { bytesRead } = await handle.read(buffer, done, buffer.length - done, position + done);
    if (bytesRead === 0) throw new InvalidSafetensorsError("file ended inside its header");
    done += bytesRead;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
