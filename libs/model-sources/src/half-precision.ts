import { readFile, writeFile } from "node:fs/promises";
import { encodeSafetensors, parseSafetensors } from "./safetensors.js";

const scratch = new DataView(new ArrayBuffer(4));

/**
 * The IEEE 754 binary16 bits nearest to `x` (ties to even), as a GPU's conversion gives them:
 * values beyond f16's range become ±infinity, values below half its smallest subnormal ±0, NaN
 * stays NaN.
 */
export function f32ToF16Bits(x: number): number {
  scratch.setFloat32(0, x);
  const bits = scratch.getUint32(0);
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa === 0 ? 0 : 0x200);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent <= 0) {
    // A subnormal half: the f32 significand with its implicit bit, shifted into 10 bits.
    if (halfExponent < -10) return sign;
    return sign | roundShift(mantissa | 0x800000, 14 - halfExponent);
  }
  // A carry out of the mantissa correctly bumps the exponent (and may reach infinity).
  return sign | ((halfExponent << 10) + roundShift(mantissa, 13));
}

/** `value >>> shift`, rounded to nearest with ties to even. */
function roundShift(value: number, shift: number): number {
  const kept = value >>> shift;
  const rest = value & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  return rest > half || (rest === half && (kept & 1) === 1) ? kept + 1 : kept;
}

/** The value of binary16 `bits`. */
export function f16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * Writes a copy of the safetensors file `source` to `target` with every F32 tensor stored as
 * F16, other tensors and the metadata unchanged: half the bytes, for carrying real weights to a
 * machine over a size-limited link. The sidecar computes in whatever `dtype` it is told,
 * whatever the file stores, so an f16 file also loads as f32 (with f16-rounded values).
 *
 * @throws InvalidSafetensorsError when `source` is not well-formed safetensors.
 */
export async function writeHalfPrecision(source: string, target: string): Promise<void> {
  const bytes = await readFile(source);
  const { header, dataStart } = parseSafetensors(bytes);
  const ordered = [...header.tensors].sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0]);
  const tensors = ordered.map((tensor) => {
    const [begin, end] = tensor.dataOffsets;
    const data = bytes.subarray(dataStart + begin, dataStart + end);
    if (tensor.dtype !== "F32") return { ...tensor, data };
    const half = Buffer.alloc(data.length / 2);
    for (let i = 0; i < data.length / 4; i++) {
      half.writeUInt16LE(f32ToF16Bits(data.readFloatLE(i * 4)), i * 2);
    }
    return { ...tensor, dtype: "F16", data: half };
  });
  await writeFile(target, encodeSafetensors(tensors, header.metadata));
}
