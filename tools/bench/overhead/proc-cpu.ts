/**
 * CPU time of processes, read from `/proc/<pid>/stat` (user + system, children excluded), so a
 * bench can charge each cluster process its share of a load step.
 */
import { readFile, readdir } from "node:fs/promises";
import { execFileSync } from "node:child_process";

/** Clock ticks per second of `/proc` times (`getconf CLK_TCK`, 100 on Linux x86). */
const TICKS_PER_S = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

interface Stat {
  readonly ppid: number;
  readonly comm: string;
  /** utime + stime, µs. */
  readonly cpuUs: number;
}

async function stat(pid: number): Promise<Stat> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8");
  // The command name is in parentheses and may itself hold spaces or parentheses.
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  const fields = text.slice(close + 2).split(" ");
  // After the name: state(0) ppid(1) … utime(11) stime(12).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { ppid: Number(fields[1]), comm, cpuUs: (ticks * 1e6) / TICKS_PER_S };
}

/**
 * CPU µs so far of each named role, summed over its processes (a supervisor and its replicas).
 * A process that has exited counts nothing from then on.
 */
export async function cpuUs(
  pids: Readonly<Record<string, readonly number[]>>,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [name, group] of Object.entries(pids)) {
    let sum = 0;
    for (const pid of group) sum += (await stat(pid).catch(() => undefined))?.cpuUs ?? 0;
    out[name] = sum;
  }
  return out;
}

/**
 * Pids of every child of `parent` whose command name is `comm` (`/proc` keeps the first 15
 * characters of a name).
 */
export async function childPids(parent: number, comm: string): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    // The process may end between the listing and the read.
    const s = await stat(pid).catch(() => undefined);
    if (s?.ppid === parent && s.comm === comm.slice(0, 15)) children.push(pid);
  }
  return children;
}

/** The pid of `parent`'s child named `comm`. */
export async function childPid(parent: number, comm: string): Promise<number> {
  const [pid] = await childPids(parent, comm);
  if (pid === undefined) throw new Error(`no child process "${comm}" of pid ${parent}`);
  return pid;
}
