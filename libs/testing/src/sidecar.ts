import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ManagedProcess, type ProcessExit } from "./managed-process.js";
import { sidecarBinary } from "./paths.js";
import { tempDir } from "./temp-dir.js";

/** Options for {@link startSidecar}. */
export interface SidecarOptions {
  /** Models to preload, name → directory, passed as `--model name=dir`. */
  readonly models: Readonly<Record<string, string>>;
  /** Environment variables set for the sidecar on top of this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The sidecar executable.
   *
   * @default sidecarBinary()
   */
  readonly binary?: string;
  /** Extra command-line arguments, appended after the ones this launcher sets. */
  readonly args?: readonly string[];
  /**
   * How long to wait for `ready <socket>`. Generous because the sidecar loads every model
   * before it is ready, on machines with two shared cores.
   *
   * @default 120000
   */
  readonly readyTimeoutMs?: number;
}

/** A running sidecar owned by a test. */
export interface SidecarHandle {
  /** The Unix socket it serves on. */
  readonly socketPath: string;
  readonly pid: number;
  /** Settles when the process has exited. */
  readonly exited: Promise<ProcessExit>;
  /** Recent log lines (stdout and stderr), for assertion messages. */
  output(): string;
  /** SIGTERM (the sidecar finishes in-flight work), SIGKILL after a grace period; removes the socket dir. */
  stop(): Promise<void>;
  /** Sends a signal without waiting, e.g. SIGKILL to test how clients survive a crash. */
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts the real sidecar on a socket in a fresh temp dir, preloading `models`, and resolves once
 * it prints `ready <socket>`. It runs with `--exit-on-stdin-eof` and a pipe to its stdin held by
 * this process, so it dies with the test run even when the run is killed outright.
 *
 * @throws MissingPrerequisiteError when the binary is missing.
 * @throws Error with the sidecar's recent output when it exits or stays silent before ready.
 */
export async function startSidecar(options: SidecarOptions): Promise<SidecarHandle> {
  const binary = options.binary ?? sidecarBinary();
  const dir = await tempDir("sidecar");
  const socketPath = join(dir, "sidecar.sock");
  const modelArgs = Object.entries(options.models).flatMap(([name, path]) => [
    "--model",
    `${name}=${path}`,
  ]);
  const child = ManagedProcess.spawn(
    binary,
    ["--socket", socketPath, ...modelArgs, "--exit-on-stdin-eof", ...(options.args ?? [])],
    { env: { ...process.env, ...options.env }, stdin: "pipe" },
  );
  try {
    const line = await child.waitForLine(
      "stdout",
      (l) => l.startsWith("ready "),
      options.readyTimeoutMs ?? 120_000,
      "`ready <socket>`",
    );
    if (line !== `ready ${socketPath}`) {
      throw new Error(`${binary}: announced "${line}", expected "ready ${socketPath}"`);
    }
  } catch (error) {
    await child.terminate("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return new RunningSidecar(socketPath, dir, child);
}

class RunningSidecar implements SidecarHandle {
  readonly exited: Promise<ProcessExit>;
  #stopped = false;

  constructor(
    readonly socketPath: string,
    readonly dir: string,
    readonly child: ManagedProcess,
  ) {
    this.exited = child.exited;
  }

  get pid(): number {
    return this.child.pid;
  }

  output(): string {
    return this.child.output();
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.child.terminate();
    await rm(this.dir, { recursive: true, force: true });
  }
}
