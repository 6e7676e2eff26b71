import { InvalidArchiveError } from "./archive-error.js";

// One 512-byte tar header, as POSIX ustar (pax) and GNU tar write it:
// https://pubs.opengroup.org/onlinepubs/9699919799/utilities/pax.html#tag_20_92_13_06
// and https://www.gnu.org/software/tar/manual/html_node/Standard.html.

export const BLOCK = 512;

/** The kinds of entry the reader tells apart; everything else is refused by type flag. */
export type TarEntryKind =
  | "file"
  | "directory"
  | "hard-link"
  | "symlink"
  | "device"
  | "fifo"
  | "pax-header"
  | "pax-global-header"
  | "gnu-long-name"
  | "gnu-long-link"
  | "unsupported";

export interface TarHeader {
  readonly kind: TarEntryKind;
  /** The raw type flag, for messages. */
  readonly typeflag: string;
  /** `prefix/name` for ustar, `name` otherwise, as bytes decoded from UTF-8. */
  readonly name: string;
  readonly linkName: string;
  /** Bytes of data that follow the header (before padding to a block). */
  readonly size: number;
}

const KINDS: Readonly<Record<string, TarEntryKind>> = {
  "0": "file",
  "\0": "file",
  // Contiguous files: regular files everywhere but on one long-gone system.
  "7": "file",
  "1": "hard-link",
  "2": "symlink",
  "3": "device",
  "4": "device",
  "5": "directory",
  "6": "fifo",
  x: "pax-header",
  g: "pax-global-header",
  L: "gnu-long-name",
  K: "gnu-long-link",
};

/** Whether a block is all zeros: the end-of-archive marker. */
export function isZeroBlock(block: Buffer): boolean {
  for (const byte of block) if (byte !== 0) return false;
  return true;
}

/**
 * Parses a header block, checking its checksum first: a checksum mismatch is how a file that
 * is not a tar at all (or is corrupt) shows itself.
 *
 * @param offset where the block starts in the archive, for messages.
 * @throws InvalidArchiveError on a bad checksum or malformed numeric field.
 */
export function parseHeader(block: Buffer, offset: number): TarHeader {
  const stored = octal(block.subarray(148, 156), "checksum", offset);
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : (block[i] as number);
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  // Some old writers summed signed bytes; both are accepted, as GNU tar does.
  if (stored !== unsigned && stored !== signed) {
    throw new InvalidArchiveError(
      offset === 0
        ? "not a tar archive (the first header's checksum does not match)"
        : `header at byte ${offset} has a bad checksum (corrupt archive)`,
    );
  }
  const typeflag = String.fromCharCode(block[156] as number);
  const magic = block.subarray(257, 263).toString("latin1");
  const name = text(block.subarray(0, 100), "name", offset);
  // Only POSIX ustar has a prefix; old GNU headers keep other fields in those bytes.
  const prefix = magic === "ustar\0" ? text(block.subarray(345, 500), "prefix", offset) : "";
  return {
    kind: KINDS[typeflag] ?? "unsupported",
    typeflag,
    name: prefix === "" ? name : `${prefix}/${name}`,
    linkName: text(block.subarray(157, 257), "link name", offset),
    size: number(block.subarray(124, 136), "size", offset),
  };
}

/** The NUL-terminated text of a header field. */
export function text(field: Buffer, what: string, offset: number): string {
  const end = field.indexOf(0);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      end === -1 ? field : field.subarray(0, end),
    );
  } catch {
    throw new InvalidArchiveError(`header at byte ${offset}: ${what} is not valid UTF-8`);
  }
}

/** A numeric field: octal text, or GNU's base-256 for values octal cannot hold. */
function number(field: Buffer, what: string, offset: number): number {
  const first = field[0] as number;
  if ((first & 0x80) === 0) return octal(field, what, offset);
  if (first !== 0x80) throw new InvalidArchiveError(`header at byte ${offset}: negative ${what}`);
  let value = 0n;
  for (const byte of field.subarray(1)) value = (value << 8n) | BigInt(byte);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new InvalidArchiveError(`header at byte ${offset}: ${what} ${value} is implausible`);
  }
  return Number(value);
}

function octal(field: Buffer, what: string, offset: number): number {
  const digits = field
    .toString("latin1")
    .replace(/[\0 ]+$/, "")
    .replace(/^ +/, "");
  if (digits === "") return 0;
  if (!/^[0-7]+$/.test(digits)) {
    throw new InvalidArchiveError(
      offset === 0
        ? "not a tar archive (its first header is malformed)"
        : `header at byte ${offset}: ${what} is not an octal number`,
    );
  }
  return parseInt(digits, 8);
}

/** The records of a pax extended header this reader honours. */
export interface PaxRecords {
  readonly path?: string;
  readonly size?: number;
}

/**
 * Parses pax extended header records (`"<length> <key>=<value>\n"`, the length counting the
 * whole record). Only `path` and `size` change how the next entry is read; the others (times,
 * owners, extended attributes) are read past.
 *
 * @throws InvalidArchiveError when a record is malformed.
 */
export function parsePax(data: Buffer, offset: number): PaxRecords {
  const records: { path?: string; size?: number } = {};
  let at = 0;
  const malformed = (): InvalidArchiveError =>
    new InvalidArchiveError(`pax header at byte ${offset} is malformed`);
  while (at < data.length) {
    // Writers pad the data with NULs to the block; nothing follows them.
    if (data[at] === 0) break;
    const space = data.indexOf(0x20, at);
    if (space === -1 || space - at > 20) throw malformed();
    const lengthText = data.subarray(at, space).toString("latin1");
    if (!/^[1-9][0-9]*$/.test(lengthText)) throw malformed();
    const length = Number(lengthText);
    const end = at + length;
    if (end > data.length || data[end - 1] !== 0x0a) throw malformed();
    // Values may be binary (GNU tar's SCHILY.xattr.*): only those used are decoded as text.
    const equals = data.indexOf(0x3d, space + 1);
    if (equals <= space + 1 || equals >= end) throw malformed();
    const key = data.subarray(space + 1, equals).toString("latin1");
    const raw = data.subarray(equals + 1, end - 1);
    if (key === "path") {
      if (raw.includes(0)) throw malformed();
      records.path = text(raw, "pax path", offset);
    } else if (key === "size") {
      const value = raw.toString("latin1");
      if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(Number(value))) throw malformed();
      records.size = Number(value);
    }
    at = end;
  }
  return records;
}
