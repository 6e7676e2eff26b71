import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { ObjectStore } from "@nats-io/obj";
import { AdapterIntegrityError } from "./store-errors.js";
import type { FileDigest } from "./store-records.js";

/** One file to fetch: the object it is stored as, the name it gets, what it must match. */
export interface FetchedFile {
  readonly object: string;
  readonly file: string;
  readonly digest: FileDigest;
}

/**
 * Writes `files` into `dir` so that `dir` is only ever seen complete: they are streamed into a
 * fresh directory beside it (same parent, so the same filesystem), each checked against its
 * size and SHA-256, and the directory is renamed into place. When `dir` already exists (an
 * earlier fetch, or another process winning a race) its files are checked instead and it is
 * kept if they match.
 *
 * @throws AdapterIntegrityError when an object is missing or differs from its digest, or an
 *   existing `dir` holds other files.
 */
export async function fetchFilesInto(
  objects: ObjectStore,
  files: readonly FetchedFile[],
  dir: string,
): Promise<string> {
  if (await holds(dir, files)) return dir;
  await mkdir(dirname(dir), { recursive: true });
  const staging = join(dirname(dir), `.${basename(dir)}.partial-${randomUUID()}`);
  await mkdir(staging);
  try {
    for (const file of files) await fetchOne(objects, file, join(staging, file.file));
    try {
      await rename(staging, dir);
    } catch (error) {
      if (!isErrno(error, "ENOTEMPTY") && !isErrno(error, "EEXIST")) throw error;
      if (!(await holds(dir, files))) {
        throw new AdapterIntegrityError(`${dir} exists and holds other files than the adapter's`);
      }
    }
    return dir;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function fetchOne(objects: ObjectStore, file: FetchedFile, path: string): Promise<void> {
  const result = await objects.get(file.object);
  if (result === null) throw new AdapterIntegrityError(`stored object ${file.object} is missing`);
  const hash = createHash("sha256");
  let bytes = 0;
  const handle = await open(path, "wx");
  try {
    for await (const chunk of result.data) {
      bytes += chunk.byteLength;
      if (bytes > file.digest.bytes) {
        throw new AdapterIntegrityError(`stored object ${file.object} is larger than recorded`);
      }
      hash.update(chunk);
      await handle.write(chunk);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  // Resolves to null or undefined when the read succeeded, depending on the client version.
  const failed: unknown = await result.error;
  if (failed instanceof Error) {
    throw new AdapterIntegrityError(`reading ${file.object} failed: ${failed.message}`, {
      cause: failed,
    });
  }
  if (bytes !== file.digest.bytes || hash.digest("hex") !== file.digest.sha256) {
    throw new AdapterIntegrityError(
      `stored object ${file.object} differs from its recorded digest`,
    );
  }
}

/** Whether `dir` holds every file with its recorded digest. */
async function holds(dir: string, files: readonly FetchedFile[]): Promise<boolean> {
  for (const file of files) {
    let data: Buffer;
    try {
      data = await readFile(join(dir, file.file));
    } catch (error) {
      if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) return false;
      throw error;
    }
    const sha256 = createHash("sha256").update(data).digest("hex");
    if (data.length !== file.digest.bytes || sha256 !== file.digest.sha256) return false;
  }
  return true;
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
