import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { ArchiveTooLargeError, InvalidArchiveError } from "./archive-error.js";
import { ByteReader, TruncatedArchiveError } from "./byte-reader.js";
import { BLOCK, isZeroBlock, parseHeader, parsePax, text, type PaxRecords } from "./tar-header.js";

/** Bounds on what an archive can make the reader hold or do. */
export interface TarLimits {
  /** Most headers, of any kind (files, directories, pax and long-name headers). @default 1000 */
  readonly maxEntries?: number;
  /** Largest regular file. @default 256 MiB */
  readonly maxFileBytes?: number;
  /**
   * Most bytes read from the archive once decompressed: headers, data and padding. A gzip bomb
   * is stopped here, however small it is compressed. @default 256 MiB
   */
  readonly maxTotalBytes?: number;
}

/** Regular files by path, relative to the archive's root (see {@link readTar}). */
export type TarFiles = ReadonlyMap<string, Buffer>;

export const DEFAULT_TAR_LIMITS: Readonly<Required<TarLimits>> = Object.freeze({
  maxEntries: 1000,
  maxFileBytes: 256 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
});

/** Long names and pax headers beyond this are not names of adapter files. */
const MAX_METADATA_BYTES = 64 * 1024;

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Reads a tar archive (POSIX ustar/pax or GNU; gzip-compressed when it starts with the gzip
 * magic) from a stream, and returns the regular files in it. Nothing is written to disk.
 *
 * - Names are normalised (`./` and empty components dropped). When every file sits under one
 *   leading directory (`tar -cf - my-adapter`), that directory is stripped, so both
 *   `my-adapter/adapter_config.json` and `./adapter_config.json` come back as
 *   `adapter_config.json`.
 * - Long names are supported in both common forms: pax `path` records (and pax `size`), and GNU
 *   `L` headers. Pax global headers, GNU long link names and directories are read past.
 * - Refused: symbolic and hard links, devices and FIFOs, any other entry type (sparse files,
 *   multi-volume parts), absolute names, `..` components, two files of one name, more than
 *   `maxEntries` headers, a file or a decompressed archive over its limit, bad checksums,
 *   corrupt gzip, and an archive that ends before its end-of-archive block.
 *
 * After the end-of-archive block the stream is read to its end (within the limit) but ignored,
 * so a caller reading from a socket sees its request consumed.
 *
 * @throws ArchiveTooLargeError when a size limit is passed.
 * @throws InvalidArchiveError for anything else wrong with the archive; errors the source
 *   itself throws pass through unchanged.
 */
export async function readTar(
  source: AsyncIterable<Uint8Array>,
  limits: TarLimits = {},
): Promise<TarFiles> {
  const bounds = { ...DEFAULT_TAR_LIMITS, ...limits };
  const reader = new ByteReader(decompressed(source), bounds.maxTotalBytes);
  try {
    return await readEntries(reader, bounds);
  } finally {
    await reader.close();
  }
}

async function readEntries(reader: ByteReader, bounds: Required<TarLimits>): Promise<TarFiles> {
  const files = new Map<string, Buffer>();
  let entries = 0;
  let pax: PaxRecords = {};
  let longName: string | undefined;
  for (;;) {
    const offset = reader.offset;
    const block = await firstOrNextBlock(reader, offset);
    if (block === undefined) {
      throw new InvalidArchiveError(
        offset === 0
          ? "archive is empty"
          : "archive ends without its end-of-archive block (truncated?)",
      );
    }
    if (isZeroBlock(block)) break;
    const header = parseHeader(block, offset);
    if (++entries > bounds.maxEntries) {
      throw new InvalidArchiveError(`archive has more than ${bounds.maxEntries} entries`);
    }
    const size = header.kind === "file" ? (pax.size ?? header.size) : header.size;
    const padded = Math.ceil(size / BLOCK) * BLOCK;
    const name = pax.path ?? longName ?? header.name;
    switch (header.kind) {
      case "pax-header":
        pax = parsePax(await reader.read(metadataSize(padded, offset)), offset);
        continue;
      case "gnu-long-name":
        longName = text(await reader.read(metadataSize(padded, offset)), "long name", offset);
        continue;
      case "pax-global-header":
      case "gnu-long-link":
        await reader.skip(metadataSize(padded, offset));
        continue;
      case "directory":
        checkPath(name, offset);
        await reader.skip(padded);
        break;
      case "file": {
        const path = checkPath(name, offset);
        if (path === "") throw new InvalidArchiveError(`file at byte ${offset} has an empty name`);
        if (files.has(path)) throw new InvalidArchiveError(`archive holds ${path} twice`);
        if (size > bounds.maxFileBytes) {
          throw new ArchiveTooLargeError(
            `${path} is ${size} bytes, over the ${bounds.maxFileBytes}-byte limit for one file`,
          );
        }
        files.set(path, await reader.read(size));
        await reader.skip(padded - size);
        break;
      }
      case "symlink":
      case "hard-link":
        throw new InvalidArchiveError(
          `${name} is a ${header.kind === "symlink" ? "symbolic" : "hard"} link; links are not accepted`,
        );
      case "device":
      case "fifo":
        throw new InvalidArchiveError(
          `${name} is a ${header.kind}; only regular files are accepted`,
        );
      case "unsupported":
        throw new InvalidArchiveError(
          `${name} has tar entry type ${JSON.stringify(header.typeflag)}, which is not supported`,
        );
    }
    pax = {};
    longName = undefined;
  }
  await reader.drain();
  return stripCommonDirectory(files);
}

/** The next header block; a stream shorter than one block is no tar at all, not a truncated one. */
async function firstOrNextBlock(reader: ByteReader, offset: number): Promise<Buffer | undefined> {
  try {
    return await reader.readOrEnd(BLOCK);
  } catch (error) {
    if (offset !== 0 || !(error instanceof TruncatedArchiveError)) throw error;
    throw new InvalidArchiveError("not a tar archive (shorter than one 512-byte header)", {
      cause: error,
    });
  }
}

/**
 * Normalises an entry name and refuses names that would escape a directory if they were ever
 * extracted: absolute, or with a `..` component.
 */
function checkPath(name: string, offset: number): string {
  if (name.startsWith("/")) {
    throw new InvalidArchiveError(`entry at byte ${offset} has an absolute name: ${name}`);
  }
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) {
    throw new InvalidArchiveError(`entry at byte ${offset} has a ".." component: ${name}`);
  }
  return parts.join("/");
}

function metadataSize(padded: number, offset: number): number {
  if (padded > MAX_METADATA_BYTES) {
    throw new InvalidArchiveError(
      `extended header at byte ${offset} is over ${MAX_METADATA_BYTES} bytes`,
    );
  }
  return padded;
}

/** Drops the one directory every file sits under, if there is one. */
function stripCommonDirectory(files: Map<string, Buffer>): TarFiles {
  let common: string | undefined;
  for (const path of files.keys()) {
    const slash = path.indexOf("/");
    if (slash === -1) return files;
    const first = path.slice(0, slash);
    if (common !== undefined && first !== common) return files;
    common = first;
  }
  if (common === undefined) return files;
  const cut = common.length + 1;
  return new Map([...files].map(([path, data]) => [path.slice(cut), data]));
}

/**
 * The most a gzip stream may inflate its input, past {@link BOMB_FLOOR_BYTES}: safetensors of
 * trained (or freshly initialised, half zeros) LoRA weights compress a few-fold at most.
 */
const MAX_INFLATION = 100;
/** Output below which the ratio is not checked: a small config compresses well. */
const BOMB_FLOOR_BYTES = 8 * 1024 * 1024;

/**
 * The archive's bytes: the source as it is, or gunzipped when it starts with the gzip magic.
 * The source's own iterator is never returned early from here, so a caller's request stream
 * is not destroyed when reading stops; it is the caller's to drain or close.
 */
async function* decompressed(source: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < GZIP_MAGIC.length) {
    const next = await iterator.next();
    if (next.done === true) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* rest(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return;
      yield Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    }
  }
  if (head[0] !== GZIP_MAGIC[0] || head[1] !== GZIP_MAGIC[1]) {
    yield* rest();
    return;
  }
  let compressed = 0;
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of rest()) {
      compressed += chunk.length;
      yield chunk;
    }
  }
  const gunzip = createGunzip();
  const feeding = pipeline(Readable.from(counted()), gunzip);
  // Surfaces through the iteration below; here it must only not go unhandled.
  feeding.catch(() => undefined);
  let inflated = 0;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      inflated += chunk.length;
      // Weights barely compress; a stream that inflates a hundredfold is a bomb, refused
      // before it can fill the archive's byte bound (and the registry's memory).
      if (inflated > BOMB_FLOOR_BYTES && inflated > MAX_INFLATION * compressed) {
        throw new ArchiveTooLargeError(
          `gzip stream inflates more than ${MAX_INFLATION}-fold (${inflated} bytes from ${compressed}); adapter weights do not compress like that`,
        );
      }
      yield chunk;
    }
  } catch (error) {
    if (isZlibError(error)) {
      throw new InvalidArchiveError(`gzip stream is corrupt or truncated (${error.message})`);
    }
    throw error;
  } finally {
    gunzip.destroy();
  }
}

function isZlibError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const code: unknown = (error as Error & { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("Z_");
}
