import { Decoder, Encoder } from "@msgpack/msgpack";
import { FrameTooLargeError } from "./frame-too-large-error.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

/** Size of the big-endian u32 length prefix that precedes every body. */
export const FRAME_HEADER_BYTES = 4;

/** Largest length the u32 prefix can express. */
const MAX_U32 = 0xffff_ffff;

/** The protocol's default `--max-frame-bytes`: 64 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** A decoded frame body: one MessagePack map with string keys. */
export type FrameBody = Record<string, unknown>;

// `ignoreUndefined` drops optional fields the caller left unset instead of sending nil, which
// the sidecar would reject as a field of the wrong type.
const encoder = new Encoder({ ignoreUndefined: true });

/**
 * Encodes one frame: a u32 big-endian body length followed by the MessagePack body.
 *
 * `Uint8Array` values are written as MessagePack `bin`, which is how tensors travel.
 */
export function encodeFrame(body: object): Uint8Array {
  const encoded = encoder.encode(body);
  if (encoded.byteLength > MAX_U32) {
    throw new FrameTooLargeError(encoded.byteLength, MAX_U32);
  }
  const frame = new Uint8Array(FRAME_HEADER_BYTES + encoded.byteLength);
  new DataView(frame.buffer).setUint32(0, encoded.byteLength, false);
  frame.set(encoded, FRAME_HEADER_BYTES);
  return frame;
}

/** Options for {@link FrameDecoder}. */
export interface FrameDecoderOptions {
  /**
   * Longest body accepted, checked as soon as a length prefix arrives and before any of the
   * body is buffered.
   *
   * @default 64 MiB ({@link DEFAULT_MAX_FRAME_BYTES})
   */
  readonly maxFrameBytes?: number;
}

/**
 * Reassembles frames from a byte stream whose chunks have no relation to frame boundaries: a
 * socket read may hold half a length prefix, or several whole frames and the start of the next.
 *
 * Feed every chunk to {@link push}, then iterate {@link frames} for the bodies that are now
 * complete. Chunks are kept as they are and copied only when a body spans several of them, so a
 * large `bin` field (an embedding matrix) usually reaches the caller as a view of the received
 * bytes.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  readonly #decoder = new Decoder({ mapKeyConverter: stringKey });
  readonly #chunks: Uint8Array[] = [];
  /** Bytes of `#chunks[0]` already consumed. */
  #head = 0;
  /** Unconsumed bytes across all chunks. */
  #buffered = 0;
  /** Body length from a prefix already consumed, while its body is still incomplete. */
  #bodyLength: number | undefined;
  #failure: Error | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (!Number.isSafeInteger(max) || max < 1 || max > MAX_U32) {
      throw new RangeError(`maxFrameBytes must be an integer in 1..${MAX_U32}, got ${String(max)}`);
    }
    this.#maxFrameBytes = max;
  }

  /** Bytes received but not yet returned as part of a body. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  /** Appends one chunk of the stream. The chunk must not be modified afterwards. */
  push(chunk: Uint8Array): void {
    // After a bad length prefix nothing more can be framed, so nothing more is kept.
    if (chunk.byteLength === 0 || this.#failure !== undefined) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.byteLength;
  }

  /**
   * Yields every body completed by the chunks pushed so far, in stream order.
   *
   * @throws FrameTooLargeError when a length prefix exceeds `maxFrameBytes`. The decoder is then
   *   poisoned and throws the same error forever, because the rest of the stream is unframed.
   * @throws SidecarProtocolError when a complete body is not exactly one MessagePack map with
   *   string keys. That frame is consumed and the stream stays in sync, so iteration may resume.
   */
  *frames(): Generator<FrameBody, void, undefined> {
    for (;;) {
      if (this.#failure !== undefined) throw this.#failure;
      if (this.#bodyLength === undefined) {
        if (this.#buffered < FRAME_HEADER_BYTES) return;
        const header = this.#take(FRAME_HEADER_BYTES);
        const length = new DataView(header.buffer, header.byteOffset, FRAME_HEADER_BYTES).getUint32(
          0,
          false,
        );
        if (length > this.#maxFrameBytes) {
          this.#failure = new FrameTooLargeError(length, this.#maxFrameBytes);
          this.#chunks.length = 0;
          this.#buffered = 0;
          this.#head = 0;
          throw this.#failure;
        }
        this.#bodyLength = length;
      }
      if (this.#buffered < this.#bodyLength) return;
      const body = this.#take(this.#bodyLength);
      this.#bodyLength = undefined;
      yield this.#decodeBody(body);
    }
  }

  #decodeBody(bytes: Uint8Array): FrameBody {
    let value: unknown;
    try {
      value = this.#decoder.decode(bytes);
    } catch (error) {
      if (error instanceof SidecarProtocolError) throw error;
      throw new SidecarProtocolError("frame body is not valid MessagePack", { cause: error });
    }
    if (!isPlainMap(value)) {
      throw new SidecarProtocolError(
        `frame body is not a MessagePack map (got ${describe(value)})`,
      );
    }
    return value;
  }

  /** Removes `n <= #buffered` bytes from the front, copying only when they span chunks. */
  #take(n: number): Uint8Array {
    const first = this.#chunks[0];
    if (first !== undefined && first.byteLength - this.#head >= n) {
      const out = first.subarray(this.#head, this.#head + n);
      this.#advance(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0];
      if (chunk === undefined) throw new Error("FrameDecoder: buffered byte count out of sync");
      const count = Math.min(n - filled, chunk.byteLength - this.#head);
      out.set(chunk.subarray(this.#head, this.#head + count), filled);
      filled += count;
      this.#advance(count);
    }
    return out;
  }

  #advance(n: number): void {
    this.#head += n;
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first !== undefined && this.#head === first.byteLength) {
      this.#chunks.shift();
      this.#head = 0;
    }
  }
}

function stringKey(key: unknown): string {
  if (typeof key !== "string") {
    throw new SidecarProtocolError(`frame body has a non-string map key (${describe(key)})`);
  }
  return key;
}

function isPlainMap(value: unknown): value is FrameBody {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === null) return "nil";
  if (Array.isArray(value)) return "array";
  if (value instanceof Uint8Array) return "bin";
  return typeof value;
}
