/**
 * Writes tar archives byte by byte (POSIX ustar headers), including ones no well-behaved tool
 * would write: links, `..` names, lying sizes, bad checksums. Readers of uploaded archives are
 * tested against these as well as against what GNU tar itself writes.
 */

export interface TarEntrySpec {
  /** Stored as is in the 100-byte name field (longer names need a pax or GNU header entry). */
  readonly name: string;
  readonly data?: Uint8Array | string;
  /** The type flag: "0" file (default), "5" directory, "2" symlink, "x" pax header… */
  readonly type?: string;
  readonly linkName?: string;
  /** The size field; defaults to the data's length. Set it to lie. */
  readonly size?: number;
  /** Writes a checksum that does not match the header. */
  readonly badChecksum?: boolean;
}

export interface TarArchiveOptions {
  /** Ends with the two zero blocks of end-of-archive. @default true */
  readonly end?: boolean;
}

const BLOCK = 512;

/** A pax extended header record, `"<length> <key>=<value>\n"`, the length counting itself. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = Buffer.byteLength(body);
  let length = bodyBytes + 1;
  while (String(length).length + bodyBytes !== length) length++;
  return `${length}${body}`;
}

/** One ustar header block. */
export function tarHeader(entry: TarEntrySpec): Buffer {
  const data = toBytes(entry.data);
  const header = Buffer.alloc(BLOCK);
  const name = Buffer.from(entry.name, "utf8");
  if (name.length > 100) throw new Error(`tar name over 100 bytes: ${entry.name}`);
  name.copy(header, 0);
  octal(header, 100, 8, entry.type === "5" ? 0o755 : 0o644);
  octal(header, 108, 8, 1000);
  octal(header, 116, 8, 1000);
  octal(header, 124, 12, entry.size ?? data.length);
  octal(header, 136, 12, 1_700_000_000);
  header.write(entry.type ?? "0", 156, "latin1");
  if (entry.linkName !== undefined) header.write(entry.linkName, 157, "utf8");
  header.write("ustar\0", 257, "latin1");
  header.write("00", 263, "latin1");
  header.write("shoal", 265, "latin1");
  header.write("shoal", 297, "latin1");
  header.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of header) sum += byte;
  if (entry.badChecksum === true) sum += 1;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return header;
}

/** An archive of `entries`, each header followed by its data padded to a block. */
export function tarArchive(
  entries: readonly TarEntrySpec[],
  options: TarArchiveOptions = {},
): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const data = toBytes(entry.data);
    parts.push(tarHeader(entry), data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK));
  }
  if (options.end ?? true) parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function toBytes(data: Uint8Array | string | undefined): Buffer {
  if (data === undefined) return Buffer.alloc(0);
  return typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
}

function octal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(`${value.toString(8).padStart(width - 1, "0")}\0`, offset, "latin1");
}
