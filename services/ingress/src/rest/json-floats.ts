import { endianness } from "node:os";

/**
 * A float32 vector in a JSON body, written as a number array by {@link jsonWithFloats}.
 *
 * Each value is written with nine significant digits, which always read back (as a double,
 * then rounded to float32, as every client that keeps float32 does) to exactly the same float32
 * value, and with trailing zeros dropped. Formatting floats was the largest single cost of a
 * REST embeddings answer: `JSON.stringify` of a `number[]`, then `Float32Array.join`, print
 * each value's shortest form *as a double* (`0.10000000149011612` for float32 0.1, 17 digits
 * for almost every value), through V8's general double-to-string. Here the digits are made with
 * integer arithmetic straight into the body's bytes, and the text is about a third shorter.
 */
export class JsonFloats {
  readonly #values: Float32Array;

  /** `bytes`: little-endian float32 values. */
  constructor(bytes: Uint8Array) {
    this.#values = float32View(bytes);
  }

  get length(): number {
    return this.#values.length;
  }

  /** Most bytes the array's JSON can take: 17 a value (`-0.00000123456789`), a comma each. */
  get maxBytes(): number {
    return 18 * this.#values.length + 2;
  }

  /**
   * Writes the array's JSON into `out` at `at`; returns where it ended. Non-finite values are
   * written `null`, as JSON.stringify does.
   */
  writeTo(out: Uint8Array, at: number): number {
    const values = this.#values;
    let pos = at;
    out[pos++] = OPEN;
    for (let i = 0; i < values.length; i++) {
      if (i > 0) out[pos++] = COMMA;
      pos = writeFloat(out, pos, values[i] as number);
    }
    out[pos++] = CLOSE;
    return pos;
  }

  /** A stand-in JSON.stringify writes in its place; `jsonWithFloats` swaps it out. */
  toJSON(): string {
    pending.push(this);
    return MARK;
  }
}

const MARK = "\u0000shoal-floats\u0000";
/** The stand-in as JSON.stringify writes it (quoted, with its escapes). */
const QUOTED_MARK = JSON.stringify(MARK);
/** Vectors whose stand-ins the running `jsonWithFloats` has written, in order. */
let pending: JsonFloats[] = [];

/** `JSON.stringify(body)` as UTF-8, with every `JsonFloats` in it written as its number array. */
export function jsonWithFloats(body: unknown): Buffer {
  pending = [];
  const json = JSON.stringify(body);
  const vectors = pending;
  pending = [];
  if (vectors.length === 0) return Buffer.from(json);
  const pieces = json.split(QUOTED_MARK);
  const bound = Buffer.byteLength(json) + vectors.reduce((n, v) => n + v.maxBytes, 0);
  const out = Buffer.allocUnsafe(bound);
  let pos = out.write(pieces[0] ?? "", 0);
  for (let i = 1; i < pieces.length; i++) {
    pos = (vectors[i - 1] as JsonFloats).writeTo(out, pos);
    pos += out.write(pieces[i] ?? "", pos);
  }
  return out.subarray(0, pos);
}

const OPEN = 0x5b;
const CLOSE = 0x5d;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const EXP = 0x65;

/** 10^k for k in [-POW_SPAN, POW_SPAN], enough to scale float32's range to nine digits. */
const POW_SPAN = 64;
const POW10 = Float64Array.from({ length: 2 * POW_SPAN + 1 }, (_, i) => 10 ** (i - POW_SPAN));
const DIGITS = new Uint8Array(9);

/**
 * Writes `x` (a float32 value) with nine significant digits: `m × 10^(e-8)` with `m` an integer
 * of nine digits, rounded in double arithmetic. A float32 has 24 bits, so nine digits resolve
 * it; the double product's error (about 1e-16 relative) can move the last digit by one, which
 * stays far inside half a float32 step, so the value still reads back exactly.
 */
function writeFloat(out: Uint8Array, at: number, value: number): number {
  let pos = at;
  if (!Number.isFinite(value)) {
    out.set(NULL, pos);
    return pos + NULL.length;
  }
  if (value === 0) {
    out[pos++] = ZERO;
    return pos;
  }
  let x = value;
  if (x < 0) {
    out[pos++] = MINUS;
    x = -x;
  }
  let e = decimalExponent(x);
  let m = Math.round(x * (POW10[POW_SPAN + 8 - e] as number));
  // log10 of a value just under a power of ten can round up, or the product can round over.
  if (m >= 1e9) {
    m = Math.round(m / 10);
    e++;
  } else if (m < 1e8) {
    e--;
    m = Math.round(x * (POW10[POW_SPAN + 8 - e] as number));
  }
  // Nine digits fit an int32, whose division V8 does in integer instructions.
  let digits = m | 0;
  let n = 9;
  for (; n > 1; n--) {
    const q = (digits / 10) | 0;
    if (digits - q * 10 !== 0) break;
    digits = q;
  }
  for (let i = n - 1; i >= 0; i--) {
    const q = (digits / 10) | 0;
    DIGITS[i] = ZERO + digits - q * 10;
    digits = q;
  }
  if (e >= 0 && e < 9) {
    // 12.5, 7, 100
    const whole = Math.min(n, e + 1);
    for (let i = 0; i < whole; i++) out[pos++] = DIGITS[i] as number;
    for (let i = n; i <= e; i++) out[pos++] = ZERO;
    if (n > e + 1) {
      out[pos++] = DOT;
      for (let i = e + 1; i < n; i++) out[pos++] = DIGITS[i] as number;
    }
  } else if (e < 0 && e >= -6) {
    // 0.00123
    out[pos++] = ZERO;
    out[pos++] = DOT;
    for (let i = -1; i > e; i--) out[pos++] = ZERO;
    for (let i = 0; i < n; i++) out[pos++] = DIGITS[i] as number;
  } else {
    // 1.5e-7, 3.4e38
    out[pos++] = DIGITS[0] as number;
    if (n > 1) {
      out[pos++] = DOT;
      for (let i = 1; i < n; i++) out[pos++] = DIGITS[i] as number;
    }
    out[pos++] = EXP;
    if (e < 0) {
      out[pos++] = MINUS;
      e = -e;
    }
    if (e >= 10) out[pos++] = ZERO + Math.floor(e / 10);
    out[pos++] = ZERO + (e % 10);
  }
  return pos;
}

const NULL = Buffer.from("null");
const LOG10_2 = Math.log10(2);
const FLOAT = new Float64Array(1);
const FLOAT_BITS = new Uint32Array(FLOAT.buffer);
const HIGH = endianness() === "LE" ? 1 : 0;

/**
 * `floor(log10(x))` for a positive finite `x`, from its binary exponent (a table lookup and one
 * comparison instead of `Math.log10`, which was a fifth of the writer's time). The estimate
 * from the exponent alone is the answer or one less.
 */
function decimalExponent(x: number): number {
  FLOAT[0] = x;
  const binary = ((FLOAT_BITS[HIGH] as number) >>> 20) - 1023;
  // Subnormal doubles never occur: float32's smallest value is a normal double.
  const e = Math.floor(binary * LOG10_2);
  return x >= (POW10[POW_SPAN + e + 1] as number) ? e + 1 : e;
}

function float32View(bytes: Uint8Array): Float32Array {
  const count = Math.floor(bytes.byteLength / 4);
  if (endianness() === "LE" && bytes.byteOffset % 4 === 0) {
    return new Float32Array(bytes.buffer, bytes.byteOffset, count);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
