import { join } from "node:path";
import { ManagedProcess, type ProcessExit } from "./managed-process.js";
import { repoRoot } from "./paths.js";

export interface ServiceOptions {
  /** Environment on top of this process's. */
  readonly env: Readonly<Record<string, string>>;
  /** The `msg` of the JSON log line that says the service is ready. */
  readonly readyMessage: string;
  /** @default 120000 */
  readonly readyTimeoutMs?: number;
}

export interface ServiceHandle {
  readonly pid: number;
  readonly exited: Promise<ProcessExit>;
  /** Recent log lines, for assertion messages. */
  output(): string;
  /** Sends a signal without waiting (SIGKILL to test crash recovery). */
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM and wait; SIGKILL after the grace period. */
  stop(): Promise<ProcessExit>;
}

/**
 * Runs a service's real `main` (`services/<name>/src/main.ts`) as its own process, the way the
 * cluster runs it, and resolves once it logs `readyMessage`. Tests that need a process they can
 * kill, or a service other than the one under test, use this rather than importing it.
 */
export async function startService(name: string, options: ServiceOptions): Promise<ServiceHandle> {
  const main = join(repoRoot(), "services", name, "src", "main.ts");
  const child = ManagedProcess.spawn(process.execPath, ["--import", "tsx", main], {
    env: { ...process.env, ...options.env },
    stdin: "ignore",
  });
  const ready = (line: string): boolean => {
    try {
      return (JSON.parse(line) as { msg?: unknown }).msg === options.readyMessage;
    } catch {
      return false;
    }
  };
  await child.waitForLine("stdout", ready, options.readyTimeoutMs ?? 120_000, `${name} ready`);
  return {
    pid: child.pid,
    exited: child.exited,
    output: () => child.output(),
    kill: (signal) => {
      child.kill(signal);
    },
    stop: () => child.terminate("SIGTERM", 15_000),
  };
}
