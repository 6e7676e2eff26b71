import type { FrameBody } from "./frame.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

/**
 * Typed reads of response fields that turn a wrong shape into a {@link SidecarProtocolError}
 * naming the response and the field, instead of an `undefined` travelling further.
 */
export class Fields {
  constructor(
    private readonly body: FrameBody,
    /** What is being read, for messages: e.g. `"embed response"`. */
    private readonly what: string,
  ) {}

  uint(key: string): number {
    const value = this.body[key];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw this.#wrong(key, "an unsigned integer", value);
    }
    return value;
  }

  string(key: string): string {
    const value = this.body[key];
    if (typeof value !== "string") throw this.#wrong(key, "a string", value);
    return value;
  }

  /** A finite number, integer or float (MessagePack f32 arrives as a JS number). */
  number(key: string): number {
    const value = this.body[key];
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw this.#wrong(key, "a finite number", value);
    }
    return value;
  }

  /** Like {@link string}, but absent (or nil) is `undefined`. */
  optionalString(key: string): string | undefined {
    return this.body[key] === undefined || this.body[key] === null ? undefined : this.string(key);
  }

  /** Like {@link uint}, but absent (or nil) is `undefined`. */
  optionalUint(key: string): number | undefined {
    return this.body[key] === undefined || this.body[key] === null ? undefined : this.uint(key);
  }

  boolean(key: string): boolean {
    const value = this.body[key];
    if (typeof value !== "boolean") throw this.#wrong(key, "a boolean", value);
    return value;
  }

  bin(key: string): Uint8Array {
    const value = this.body[key];
    if (!(value instanceof Uint8Array)) throw this.#wrong(key, "bin", value);
    return value;
  }

  oneOf<const T extends string>(key: string, allowed: readonly T[]): T {
    const value = this.body[key];
    if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
      throw this.#wrong(key, `one of ${allowed.join(", ")}`, value);
    }
    return value as T;
  }

  map(key: string): Fields {
    const value = this.body[key];
    if (!isMap(value)) throw this.#wrong(key, "a map", value);
    return new Fields(value, `${this.what} field "${key}"`);
  }

  uintArray(key: string): number[] {
    return this.#array(
      key,
      "unsigned integers",
      (v): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0,
    );
  }

  booleanArray(key: string): boolean[] {
    return this.#array(key, "booleans", (v): v is boolean => typeof v === "boolean");
  }

  stringArray(key: string): string[] {
    return this.#array(key, "strings", (v): v is string => typeof v === "string");
  }

  /** An array holding one array of maps per input, e.g. the entities of each text. */
  arrayOfMapArrays(key: string): Fields[][] {
    const rows = this.#array(
      key,
      "arrays of maps",
      (v): v is FrameBody[] => Array.isArray(v) && v.every(isMap),
    );
    return rows.map((row, i) =>
      row.map((item, j) => new Fields(item, `${this.what} field "${key}[${i}][${j}]"`)),
    );
  }

  /** Whether `key` is present with a value other than nil. */
  has(key: string): boolean {
    return this.body[key] !== undefined && this.body[key] !== null;
  }

  mapArray(key: string): Fields[] {
    return this.#array(key, "maps", isMap).map(
      (item, index) => new Fields(item, `${this.what} field "${key}[${index}]"`),
    );
  }

  #array<T>(key: string, items: string, check: (v: unknown) => v is T): T[] {
    const value = this.body[key];
    if (!Array.isArray(value) || !value.every(check)) {
      throw this.#wrong(key, `an array of ${items}`, value);
    }
    return value;
  }

  #wrong(key: string, expected: string, value: unknown): SidecarProtocolError {
    const got = value === undefined ? "missing" : `got ${describe(value)}`;
    return new SidecarProtocolError(`${this.what}: field "${key}" must be ${expected} (${got})`);
  }
}

function isMap(value: unknown): value is FrameBody {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array)
  );
}

function describe(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "array";
  if (value instanceof Uint8Array) return "bin";
  if (typeof value === "string")
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value;
}
