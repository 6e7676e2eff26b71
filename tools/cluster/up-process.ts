import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { freePort, repoRoot, tempDir } from "@shoal/testing";

/** `npm start` (tools/cluster/up.sh) run by a test, on free ports, in its own process group. */
export interface UpProcess {
  /** The environment it runs with: every port it was given is here. */
  readonly env: Readonly<Record<string, string>>;
  readonly baseUrl: string;
  /** The process group: the script and everything it started. */
  readonly group: number;
  /** What the script printed so far. */
  output(): string;
  /** Pids of the group's processes still alive whose command line contains `match`. */
  pids(match?: string): number[];
  /** Sends SIGINT to the script alone and waits for it; resolves with its exit code. */
  interrupt(): Promise<number | null>;
  /** Kills whatever of the group is left; for `finally`. */
  kill(): void;
}

/**
 * Starts up.sh with `extra` environment on top of free ports for every listener, and resolves
 * once it says the cluster is serving.
 */
export async function startUp(extra: Readonly<Record<string, string>> = {}): Promise<UpProcess> {
  const port = await freePort();
  const ports: Record<string, string> = {};
  for (const name of [
    "SHOAL_NATS_PORT",
    "SHOAL_LOADER_PORT",
    "SHOAL_REGISTRY_PORT",
    "SHOAL_INGRESS_METRICS_PORT",
    "SHOAL_WORKER_METRICS_PORT",
    "SHOAL_LOADER_METRICS_PORT",
    "SHOAL_REGISTRY_METRICS_PORT",
    "SHOAL_OFFLOADER_METRICS_PORT",
  ]) {
    ports[name] = String(await freePort());
  }
  const env = {
    ...(process.env as Record<string, string>),
    SHOAL_PORT: String(port),
    ...ports,
    SHOAL_CLUSTER_DIR: join(await tempDir("up-sh"), "cluster"),
    ...extra,
  };
  // Its own process group, like a shell's foreground job.
  const up = spawn("bash", [join(repoRoot(), "tools/cluster/up.sh")], {
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const group = up.pid ?? 0;
  let output = "";
  up.stdout.on("data", (d: Buffer) => (output += d.toString()));
  up.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = once(up, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  const pids = (match?: string): number[] => {
    try {
      const args = match === undefined ? ["-g", String(group)] : ["-g", String(group), "-f", match];
      return execFileSync("pgrep", args, { encoding: "utf8" }).trim().split("\n").map(Number);
    } catch {
      return []; // pgrep exits 1 when nothing matches
    }
  };
  const handle: UpProcess = {
    env,
    baseUrl: `http://127.0.0.1:${port}`,
    group,
    output: () => output,
    pids,
    async interrupt() {
      up.kill("SIGINT");
      const [code] = await exited;
      return code;
    },
    kill() {
      if (pids().length > 0) process.kill(-group, "SIGKILL");
    },
  };
  const deadline = Date.now() + 240_000;
  while (!output.includes("Shoal is serving")) {
    if (up.exitCode !== null || Date.now() > deadline) {
      handle.kill();
      throw new Error(`the cluster did not come up:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return handle;
}
