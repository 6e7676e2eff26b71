import { execFileSync } from "node:child_process";

/** The pid of the sidecar a worker process runs, for tests that kill it. */
export function sidecarPidOf(workerPid: number): number {
  const pid = execFileSync("pgrep", ["-P", String(workerPid), "shoal-sidecar"], {
    encoding: "utf8",
  }).trim();
  if (!/^\d+$/.test(pid)) throw new Error(`worker ${workerPid} runs no single sidecar: "${pid}"`);
  return Number(pid);
}
