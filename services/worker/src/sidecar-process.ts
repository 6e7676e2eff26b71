import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Logger } from "@shoal/telemetry";

export interface SidecarProcessOptions {
  /** Path of the `shoal-sidecar` binary. */
  readonly binary: string;
  readonly socketPath: string;
  /** @default "cpu" */
  readonly device?: string;
  /** Environment of the sidecar (OTLP settings travel this way). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
  /** How long the sidecar may take to listen. @default 60000 */
  readonly startTimeoutMs?: number;
}

/**
 * The sidecar as a child of its worker. It is started with `--exit-on-stdin-eof` and a pipe
 * on stdin, so a worker killed by SIGKILL takes its sidecar with it and the accelerator is
 * free for the worker that replaces it.
 */
export class SidecarProcess {
  readonly #child: ChildProcess;
  readonly exited: Promise<number | null>;

  private constructor(child: ChildProcess) {
    this.#child = child;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code) => {
        resolve(code);
      });
    });
  }

  static async start(options: SidecarProcessOptions): Promise<SidecarProcess> {
    const child = spawn(
      options.binary,
      ["--socket", options.socketPath, "--device", options.device ?? "cpu", "--exit-on-stdin-eof"],
      { env: options.env as NodeJS.ProcessEnv, stdio: ["pipe", "pipe", "pipe"] },
    );
    const sidecar = new SidecarProcess(child);
    const logs = createInterface({ input: child.stderr });
    logs.on("line", (line) => {
      options.logger.debug({ sidecar: line }, "sidecar log");
    });
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`sidecar did not become ready within ${timeoutMs} ms`));
      }, timeoutMs);
      const lines = createInterface({ input: child.stdout });
      lines.on("line", (line) => {
        if (line.startsWith("ready ")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`sidecar exited before ready (code ${code}, signal ${signal})`));
      });
    });
    return sidecar;
  }

  /** Kills a sidecar that stopped answering; its supervisor sees the exit and starts another. */
  kill(): void {
    this.#child.kill("SIGKILL");
  }

  /** Asks the sidecar to finish in-flight work and exit; kills it after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#child.kill("SIGTERM");
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
