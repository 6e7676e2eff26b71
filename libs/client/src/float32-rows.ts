const LITTLE_ENDIAN = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;

/**
 * A little-endian float32 `bin` as a Float32Array. On little-endian hosts (all current
 * x86 and ARM) an aligned one is a view of the answer's own bytes, no copy; unaligned bytes
 * are copied once, and a big-endian host reads each value through a DataView.
 */
export function float32View(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) {
    throw new RangeError(`an embedding of ${bytes.byteLength} bytes is not whole float32 values`);
  }
  const length = bytes.byteLength / 4;
  if (LITTLE_ENDIAN) {
    if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, length);
    return new Float32Array(bytes.slice().buffer);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Float32Array.from({ length }, (_, i) => view.getFloat32(i * 4, true));
}
