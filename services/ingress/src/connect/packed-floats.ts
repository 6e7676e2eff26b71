import type { UnknownField } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";

/**
 * A `repeated float` field written straight from little-endian float32 bytes, for answers
 * encoded in binary protobuf. Protobuf-es writes a packed float list one value at a time, each
 * through a fresh 4-byte buffer: for 384 values an embedding that was most of the gRPC path's
 * CPU and garbage. The bytes already are the field's wire form, so they go out as the field's
 * raw record (tag, length, bytes), which `toBinary` copies as it does unknown fields; readers see
 * an ordinary packed field. JSON answers cannot carry raw records and use the values.
 */
export function packedFloats(fieldNo: number, bytes: Uint8Array): UnknownField {
  const length = varint(bytes.byteLength);
  const data = new Uint8Array(length.length + bytes.byteLength);
  data.set(length);
  data.set(bytes, length.length);
  return { no: fieldNo, wireType: WireType.LengthDelimited, data };
}

/**
 * Whether a request's `content-type` asks for binary protobuf (gRPC, gRPC-Web, Connect's
 * `application/proto`), so raw records reach the client as written.
 */
export function answersInBinary(contentType: string | null): boolean {
  return contentType !== null && !/json/i.test(contentType);
}

function varint(value: number): Uint8Array {
  const out: number[] = [];
  let v = value;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Uint8Array.from(out);
}
