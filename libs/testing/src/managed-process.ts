import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** How a child process ended. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Options for {@link ManagedProcess.spawn}. */
export interface ManagedProcessOptions {
  /** Environment of the child. */
  readonly env: NodeJS.ProcessEnv;
  /**
   * `"pipe"` keeps a pipe to the child's stdin open for its whole life, for children that exit
   * when their stdin closes (so they die with us even when we are SIGKILLed).
   */
  readonly stdin: "pipe" | "ignore";
}

/** Output lines kept for error messages. */
const TAIL_LINES = 200;
/** Longest wait, after the child exited, for its remaining output. */
const DRAIN_WAIT_MS = 1000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Makes sure no child outlives the test process that spawned it: a crashed or aborted test run
 * would otherwise leave servers holding ports and accelerators.
 */
function guard(child: ChildProcess): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
  live.add(child);
  child.once("exit", () => live.delete(child));
}

type Stream = "stdout" | "stderr";

interface LineWaiter {
  readonly stream: Stream;
  readonly match: (line: string) => boolean;
  readonly resolve: (line: string) => void;
}

/**
 * A child process owned by a test: its output is read line by line (so its pipes never fill and
 * stall it), the recent lines are kept for error messages, and it is killed when the test
 * process exits.
 */
export class ManagedProcess {
  readonly #child: ChildProcess;
  readonly #tail: { readonly stream: Stream; readonly line: string }[] = [];
  readonly #waiters = new Set<LineWaiter>();
  #exit: ProcessExit | undefined;
  #spawnError: Error | undefined;
  /** Settles once stdout and stderr have closed too, i.e. every line has been read. */
  readonly #drained: Promise<void>;
  /** Settles once the process has exited, or failed to start. Never rejects. */
  readonly exited: Promise<ProcessExit>;

  private constructor(
    readonly command: string,
    args: readonly string[],
    options: ManagedProcessOptions,
  ) {
    this.#child = spawn(command, args, {
      env: options.env,
      stdio: [options.stdin, "pipe", "pipe"],
    });
    guard(this.#child);
    // The child may exit while we hold its stdin; a resulting EPIPE is not our test's failure.
    this.#child.stdin?.on("error", () => undefined);
    this.exited = new Promise((resolve) => {
      this.#child.on("error", (error) => {
        this.#spawnError = error;
        // A child that failed to spawn never emits "exit".
        if (this.#child.pid === undefined) {
          this.#exit = { code: null, signal: null };
          resolve(this.#exit);
        }
      });
      this.#child.once("exit", (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
    this.#drained = new Promise((resolve) => {
      this.#child.once("close", () => {
        resolve();
      });
      void this.exited.then(() => {
        if (this.#child.pid === undefined) resolve();
      });
    });
    for (const stream of ["stdout", "stderr"] as const) {
      const input = this.#child[stream];
      if (input === null) continue;
      createInterface({ input, crlfDelay: Infinity }).on("line", (line) => {
        this.#onLine(stream, line);
      });
    }
  }

  /** Spawns `command`; a failure to start shows up in {@link exited} and {@link waitForLine}. */
  static spawn(
    command: string,
    args: readonly string[],
    options: ManagedProcessOptions,
  ): ManagedProcess {
    return new ManagedProcess(command, args, options);
  }

  /** The OS process id. */
  get pid(): number {
    return this.#child.pid ?? -1;
  }

  /** How the process ended, once it has. */
  get exit(): ProcessExit | undefined {
    return this.#exit;
  }

  /** The last lines of output, each prefixed with its stream, for error messages. */
  output(stream?: Stream): string {
    return this.#tail
      .filter((entry) => stream === undefined || entry.stream === stream)
      .map((entry) => (stream === undefined ? `[${entry.stream}] ${entry.line}` : entry.line))
      .join("\n");
  }

  /**
   * Resolves with the first line on `stream` that `match` accepts. Rejects, with the process's
   * recent output in the message, if it exits first or `timeoutMs` passes.
   */
  waitForLine(
    stream: Stream,
    match: (line: string) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<string> {
    return new Promise((resolve, reject) => {
      const waiter: LineWaiter = {
        stream,
        match,
        resolve: (line) => {
          cleanup();
          resolve(line);
        },
      };
      const fail = (reason: string): void => {
        cleanup();
        reject(
          new Error(
            `${this.command}: ${reason} before ${what}\n--- recent output ---\n${this.output()}`,
            {
              cause: this.#spawnError,
            },
          ),
        );
      };
      const timer = setTimeout(() => {
        fail(`no ${what} within ${timeoutMs} ms`);
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
      };
      this.#waiters.add(waiter);
      void this.exited.then(async (exit) => {
        // Let the child's last lines arrive before giving up: they usually say why it exited.
        // A grandchild holding the pipes open must not keep us waiting, hence the bound.
        await Promise.race([this.#drained, delay(DRAIN_WAIT_MS)]);
        if (!this.#waiters.has(waiter)) return;
        const how =
          this.#spawnError !== undefined && exit.code === null && exit.signal === null
            ? `failed to start (${this.#spawnError.message})`
            : `exited with ${exit.signal === null ? `code ${String(exit.code)}` : exit.signal}`;
        fail(how);
      });
    });
  }

  /** Sends `signal` if the process is still running. */
  kill(signal: NodeJS.Signals): void {
    if (this.#exit === undefined) this.#child.kill(signal);
  }

  /**
   * Stops the process: `signal`, then SIGKILL if it has not exited after `graceMs`.
   * Resolves once it has exited.
   */
  async terminate(signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<ProcessExit> {
    if (this.#exit !== undefined) return this.#exit;
    this.#child.kill(signal);
    const timer = setTimeout(() => {
      this.#child.kill("SIGKILL");
    }, graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the child's stdin, for children that exit on EOF. */
  closeStdin(): void {
    this.#child.stdin?.end();
  }

  #onLine(stream: Stream, line: string): void {
    this.#tail.push({ stream, line });
    if (this.#tail.length > TAIL_LINES) this.#tail.shift();
    for (const waiter of this.#waiters) {
      if (waiter.stream === stream && waiter.match(line)) waiter.resolve(line);
    }
  }
}
