const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reads raw little-endian f32 bytes (an `embeddings` field) as a `Float32Array`.
 *
 * A `Float32Array` view needs a byte offset that is a multiple of 4, but a `bin` decoded from a
 * frame sits wherever it fell in the socket chunk. When the offset is aligned (and the platform
 * is little-endian) the result is a view that shares memory with `bytes`; otherwise it is a copy.
 *
 * @throws RangeError when the byte length is not a multiple of 4.
 */
export function toFloat32Array(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) {
    throw new RangeError(`f32 data must be a multiple of 4 bytes, got ${bytes.byteLength}`);
  }
  const length = bytes.byteLength / 4;
  if (littleEndian) {
    if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, length);
    return new Float32Array(bytes.slice().buffer);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
