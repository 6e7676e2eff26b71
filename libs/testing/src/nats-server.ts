import { rm } from "node:fs/promises";
import { freePort } from "./free-port.js";
import { ManagedProcess } from "./managed-process.js";
import { natsServerBinary } from "./paths.js";
import { tempDir } from "./temp-dir.js";

/** Options for {@link startNatsServer}. */
export interface NatsServerOptions {
  /**
   * The nats-server executable.
   *
   * @default natsServerBinary()
   */
  readonly binary?: string;
  /** Extra command-line arguments, appended after the ones this launcher sets. */
  readonly args?: readonly string[];
  /**
   * How long to wait for "Server is ready".
   *
   * @default 15000
   */
  readonly readyTimeoutMs?: number;
}

/** Options for {@link NatsServerHandle.restart}. */
export interface NatsRestartOptions {
  /**
   * How to stop the running server: SIGTERM shuts down cleanly, SIGKILL simulates a crash.
   *
   * @default "SIGTERM"
   */
  readonly signal?: NodeJS.Signals;
  /**
   * Run while the server is down, before the new one starts: a test checks here what its
   * clients do without a server (the restart waits for it).
   */
  readonly whileDown?: () => Promise<void>;
}

/** A running nats-server owned by a test. */
export interface NatsServerHandle {
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** JetStream store directory; kept across {@link restart}, removed by {@link stop}. */
  readonly storeDir: string;
  /** Process id of the current server process (changes on restart). */
  readonly pid: number;
  /** Recent log lines of the current server process. */
  output(): string;
  /** Stops the server and removes its store. Safe to call more than once. */
  stop(): Promise<void>;
  /**
   * Stops the server and starts a new one on the same port with the same store, resolving once
   * it accepts connections again: clients reconnect to the same URL and find their streams.
   */
  restart(options?: NatsRestartOptions): Promise<void>;
}

const READY_LINE = "Server is ready";
/** Attempts with a fresh port when another process took the free port first. */
const PORT_ATTEMPTS = 5;

/**
 * Starts the pinned nats-server with JetStream on a random free port of 127.0.0.1 and a fresh
 * temporary store, resolving once it logs "Server is ready" (it logs that only after its client
 * listener accepts connections).
 *
 * @throws MissingPrerequisiteError when the binary is missing.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const binary = options.binary ?? natsServerBinary();
  const readyTimeoutMs = options.readyTimeoutMs ?? 15_000;
  const storeDir = await tempDir("nats");
  try {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        const child = await launch(binary, port, storeDir, options.args ?? [], readyTimeoutMs);
        return new RunningNatsServer(
          binary,
          port,
          storeDir,
          options.args ?? [],
          readyTimeoutMs,
          child,
        );
      } catch (error) {
        if (attempt >= PORT_ATTEMPTS || !String(error).includes("address already in use"))
          throw error;
      }
    }
  } catch (error) {
    await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
}

async function launch(
  binary: string,
  port: number,
  storeDir: string,
  args: readonly string[],
  readyTimeoutMs: number,
): Promise<ManagedProcess> {
  const child = ManagedProcess.spawn(
    binary,
    ["-js", "-sd", storeDir, "-p", String(port), "-a", "127.0.0.1", ...args],
    { env: process.env, stdin: "ignore" },
  );
  try {
    await child.waitForLine(
      "stderr",
      (line) => line.includes(READY_LINE),
      readyTimeoutMs,
      `"${READY_LINE}"`,
    );
  } catch (error) {
    await child.terminate("SIGKILL");
    throw error;
  }
  return child;
}

class RunningNatsServer implements NatsServerHandle {
  readonly url: string;
  #child: ManagedProcess;
  #stopped = false;

  constructor(
    readonly binary: string,
    readonly port: number,
    readonly storeDir: string,
    readonly args: readonly string[],
    readonly readyTimeoutMs: number,
    child: ManagedProcess,
  ) {
    this.url = `nats://127.0.0.1:${port}`;
    this.#child = child;
  }

  get pid(): number {
    return this.#child.pid;
  }

  output(): string {
    return this.#child.output();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#child.terminate();
    await rm(this.storeDir, { recursive: true, force: true });
  }

  async restart(options: NatsRestartOptions = {}): Promise<void> {
    if (this.#stopped) throw new Error("restart of a nats-server that was stopped");
    await this.#child.terminate(options.signal ?? "SIGTERM");
    await options.whileDown?.();
    this.#child = await launch(
      this.binary,
      this.port,
      this.storeDir,
      this.args,
      this.readyTimeoutMs,
    );
  }
}
