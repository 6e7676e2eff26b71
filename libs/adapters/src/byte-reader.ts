import { ArchiveTooLargeError, InvalidArchiveError } from "./archive-error.js";

/** The stream ended part-way through a read. */
export class TruncatedArchiveError extends InvalidArchiveError {
  override readonly name: string = "TruncatedArchiveError";
}

/**
 * Exact-length reads over a stream of chunks, counting every byte pulled so that no archive,
 * however it is laid out, makes the reader take in more than `limit` bytes.
 */
export class ByteReader {
  readonly #source: AsyncIterator<Uint8Array>;
  readonly #limit: number;
  readonly #chunks: Buffer[] = [];
  #buffered = 0;
  /** Bytes pulled from the source so far. */
  #pulled = 0;
  /** Bytes handed out (or skipped) so far: the offset of the next byte. */
  #offset = 0;

  constructor(source: AsyncIterable<Uint8Array>, limit: number) {
    this.#source = source[Symbol.asyncIterator]();
    this.#limit = limit;
  }

  /** Offset of the next byte in the stream, for error messages. */
  get offset(): number {
    return this.#offset;
  }

  /**
   * The next `length` bytes, or undefined when the stream ends before the first of them.
   *
   * @throws InvalidArchiveError when it ends part-way through.
   */
  async readOrEnd(length: number): Promise<Buffer | undefined> {
    if (!(await this.#fill(length))) {
      if (this.#buffered === 0) return undefined;
      throw this.#truncated();
    }
    return this.#take(length);
  }

  /** @throws InvalidArchiveError when the stream ends before `length` bytes. */
  async read(length: number): Promise<Buffer> {
    if (!(await this.#fill(length))) throw this.#truncated();
    return this.#take(length);
  }

  /** Reads and drops `length` bytes. */
  async skip(length: number): Promise<void> {
    let left = length;
    while (left > 0) {
      const step = Math.min(left, 1024 * 1024);
      await this.read(step);
      left -= step;
    }
  }

  /** Reads to the end of the stream, still within the limit, and drops what it reads. */
  async drain(): Promise<void> {
    this.#chunks.length = 0;
    this.#offset += this.#buffered;
    this.#buffered = 0;
    while (await this.#pull()) {
      this.#offset += this.#buffered;
      this.#chunks.length = 0;
      this.#buffered = 0;
    }
  }

  /** Stops reading: the source iterator is returned, releasing what it holds (a gunzip). */
  async close(): Promise<void> {
    await this.#source.return?.();
  }

  async #fill(length: number): Promise<boolean> {
    while (this.#buffered < length) {
      if (!(await this.#pull())) return false;
    }
    return true;
  }

  async #pull(): Promise<boolean> {
    const next = await this.#source.next();
    if (next.done === true) return false;
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    this.#pulled += chunk.length;
    if (this.#pulled > this.#limit) {
      throw new ArchiveTooLargeError(
        `archive is larger than ${this.#limit} bytes once decompressed`,
      );
    }
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    return true;
  }

  #take(length: number): Buffer {
    this.#offset += length;
    this.#buffered -= length;
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= length) {
      const out = first.subarray(0, length);
      if (first.length === length) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(length);
      return out;
    }
    const out = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const chunk = this.#chunks[0] as Buffer;
      const used = Math.min(chunk.length, length - filled);
      chunk.copy(out, filled, 0, used);
      filled += used;
      if (used === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(used);
    }
    return out;
  }

  #truncated(): TruncatedArchiveError {
    return new TruncatedArchiveError(
      `archive ends unexpectedly after ${this.#offset + this.#buffered} bytes (truncated?)`,
    );
  }
}
