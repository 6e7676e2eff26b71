import { chmod, mkdir, mkdtemp, open, readdir, rename, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Logger } from "@shoal/telemetry";
import { isErrno } from "./validate.js";

// A model is fetched into a staging directory beside its target (same filesystem, so the final
// rename is atomic) and renamed into place with its marker already inside. Staging names carry
// the host and pid that own them: without a lock shared by every process (Node has no flock),
// that is what lets a later run tell a dead process's leftovers from another's live download.

/** `.<target name>.tmp-`: every staging directory of one target starts with this. */
function stagingPrefix(target: string): string {
  return `.${basename(target)}.tmp-`;
}

/** This host, made filename-safe, as the first part of an owner tag. */
function hostTag(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9-]/g, "_")
    .slice(0, 32);
  return `${host === "" ? "host" : host}-`;
}

/** This process's owner tag: host and pid. */
function ownerTag(): string {
  return `${hostTag()}${process.pid}-`;
}

/** Creates an empty staging directory for `target`, creating its parent if needed. */
export async function createStagingDir(target: string): Promise<string> {
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const dir = await mkdtemp(join(parent, stagingPrefix(target) + ownerTag()));
  // mkdtemp makes it 0700; model files are not secret and other users may serve them.
  await chmod(dir, 0o755);
  return dir;
}

/**
 * Removes staging directories for `target` left by processes on this host that no longer
 * exist (a crash or kill mid-download). Directories of live processes and of other hosts
 * sharing the volume are left alone.
 */
export async function reapStaleStaging(target: string, logger: Logger | undefined): Promise<void> {
  const parent = dirname(target);
  const prefix = stagingPrefix(target) + hostTag();
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    logger?.info({ path: join(parent, name), pid }, "removing staging dir of a dead process");
    await rm(join(parent, name), { recursive: true, force: true });
  }
}

/** What {@link promote} did. */
export type PromoteOutcome = "renamed" | "kept-existing";

/** Rename failures that mean "something is already at the target". */
const OCCUPIED = ["ENOTEMPTY", "EEXIST", "ENOTDIR", "EISDIR"];

/**
 * Renames `staging` to `target`. If `target` exists, `isComplete` decides: a complete one
 * (another process won the race) is kept and `staging` removed; anything else (a directory
 * without a valid marker) is moved aside and deleted, and the rename retried.
 */
export async function promote(
  staging: string,
  target: string,
  isComplete: () => Promise<boolean>,
): Promise<PromoteOutcome> {
  // A few rounds cover any honest race; more means something keeps recreating the target.
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      await rename(staging, target);
      await syncDir(dirname(target));
      return "renamed";
    } catch (error) {
      if (!OCCUPIED.some((code) => isErrno(error, code))) throw error;
    }
    if (await isComplete()) {
      await rm(staging, { recursive: true, force: true });
      return "kept-existing";
    }
    // Renamed away first, so the deletion happens under a staging name that no process
    // mistakes for a model directory even if it is interrupted.
    const aside = await createStagingDir(target);
    try {
      await rename(target, join(aside, "old"));
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error;
    } finally {
      await rm(aside, { recursive: true, force: true });
    }
  }
  throw new Error(`${target} keeps reappearing incomplete while being replaced`);
}

/** Flushes a directory entry change (the rename) to disk. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return !isErrno(error, "ESRCH");
  }
}
