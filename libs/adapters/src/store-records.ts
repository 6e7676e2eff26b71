import type { AdapterSummary } from "./peft.js";
import { CONFIG_FILE, WEIGHTS_FILE } from "./peft.js";
import { checkAdapterName } from "./reference.js";
import { AdapterNotFoundError } from "./store-errors.js";

/** The Object Store bucket holding adapter files (stream `OBJ_shoal-adapters`). */
export const ADAPTER_BUCKET = "shoal-adapters";

/** The KV bucket indexing adapters: key `<baseKey>.<name>`, value an {@link AdapterRecord}. */
export const ADAPTER_INDEX_BUCKET = "shoal-adapter-index";

/** Size and SHA-256 (lower-case hex) of one stored file, checked on every fetch. */
export interface FileDigest {
  readonly sha256: string;
  readonly bytes: number;
}

/** One immutable version of an adapter: what it is, and the digests of its two files. */
export interface AdapterVersion extends AdapterSummary {
  /** From 1, increasing; never reused while the adapter exists. */
  readonly version: number;
  readonly files: { readonly config: FileDigest; readonly weights: FileDigest };
  /** ISO 8601. */
  readonly createdAt: string;
}

/** An adapter of one base model: its owner and its versions. */
export interface AdapterRecord {
  /** The base model's catalog id. */
  readonly base: string;
  /** The base model's catalog key. */
  readonly baseKey: string;
  readonly name: string;
  /** The tenant that first published it; only it may publish or delete versions. */
  readonly owner: string;
  /**
   * Tenants besides the owner that may run it, `*` for every tenant. Absent or empty: private,
   * and to every other tenant as if it did not exist.
   */
  readonly sharedWith?: readonly string[];
  /**
   * Ascending by version. Empty while a first upload is in flight, and once the adapter is
   * deleted (`deleted`); a record without versions is never listed, got or resolved.
   */
  readonly versions: readonly AdapterVersion[];
  /**
   * The highest version number ever handed out for this name, published or not: uploads
   * reserve their number here before storing files, so two uploads never share one, and no
   * number is given twice, even after the adapter is deleted and the name published again.
   * Caches may therefore key adapter files on `name@version`.
   */
  readonly lastVersion: number;
  /** ISO 8601: when the first upload reserved the name (since it was last deleted). */
  readonly createdAt: string;
  /**
   * Set once every version is deleted: the record stays only to keep `lastVersion`, and the
   * name is free for any tenant to publish again.
   */
  readonly deleted?: true;
}

/** The two files of a version, by their file name in the adapter directory. */
export const ADAPTER_FILES = Object.freeze({ config: CONFIG_FILE, weights: WEIGHTS_FILE });

const BASE_KEY = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Checks a catalog key used to address adapters (the same rule the catalog enforces), so a
 * key can never add a KV token or an object-name segment.
 *
 * @throws AdapterNotFoundError when it cannot be a catalog key.
 */
export function checkBaseKey(baseKey: string): string {
  if (!BASE_KEY.test(baseKey)) {
    throw new AdapterNotFoundError(`no adapters: ${JSON.stringify(baseKey)} is not a model key`);
  }
  return baseKey;
}

/** The index key of an adapter. */
export function adapterIndexKey(baseKey: string, name: string): string {
  return `${checkBaseKey(baseKey)}.${checkAdapterName(name)}`;
}

/** Splits an index key back into base key and adapter name; undefined for a foreign key. */
export function parseAdapterIndexKey(key: string): { baseKey: string; name: string } | undefined {
  const dot = key.indexOf(".");
  if (dot === -1) return undefined;
  return { baseKey: key.slice(0, dot), name: key.slice(dot + 1) };
}

/** Where one file of one version lives in the object store: `<baseKey>/<name>/<version>/<file>`. */
export function adapterObjectName(
  baseKey: string,
  name: string,
  version: number,
  file: keyof typeof ADAPTER_FILES,
): string {
  return `${adapterObjectPrefix(baseKey, name)}${version}/${ADAPTER_FILES[file]}`;
}

/** The prefix of every object of an adapter. */
export function adapterObjectPrefix(baseKey: string, name: string): string {
  return `${checkBaseKey(baseKey)}/${checkAdapterName(name)}/`;
}

export function encodeRecord(record: AdapterRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

/**
 * Reads a record from the index. Only the fields every reader relies on are checked: the index
 * is written by this library alone, so this guards against another version's format, not
 * against hostile input.
 *
 * @throws Error when the value is not a record.
 */
export function decodeRecord(bytes: Uint8Array): AdapterRecord {
  const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
  const record = value as Partial<AdapterRecord> | null;
  if (
    typeof record !== "object" ||
    record === null ||
    typeof record.base !== "string" ||
    typeof record.baseKey !== "string" ||
    typeof record.name !== "string" ||
    typeof record.owner !== "string" ||
    typeof record.lastVersion !== "number" ||
    !Array.isArray(record.versions) ||
    !(record.versions as unknown[]).every(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as Partial<AdapterVersion>).version === "number" &&
        typeof (v as Partial<AdapterVersion>).files === "object",
    ) ||
    // Who may run it decides what other tenants see: anything but a list of names is refused.
    (record.sharedWith !== undefined &&
      !(
        Array.isArray(record.sharedWith) &&
        (record.sharedWith as unknown[]).every((t) => typeof t === "string")
      ))
  ) {
    throw new Error("adapter index entry is not an adapter record");
  }
  return record as AdapterRecord;
}
