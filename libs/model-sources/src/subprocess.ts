import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** How a child process ended. */
export interface ProcessResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last few KiB of stderr, for error messages. */
  readonly stderrTail: string;
}

const STDERR_TAIL_CHARS = 4096;

/**
 * Runs a command without a shell (arguments are never re-parsed), passing each stdout line to
 * `onLine` as it arrives. Rejects only when the command cannot be started.
 */
export function runProcess(
  command: string,
  args: readonly string[],
  onLine: (line: string) => void = () => undefined,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stderrTail = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (data: string) => {
      stderrTail = (stderrTail + data).slice(-STDERR_TAIL_CHARS);
    });
    const lines = createInterface({ input: child.stdout });
    lines.on("line", onLine);
    const stdoutDone = new Promise<void>((done) => lines.once("close", done));
    child.once("error", reject);
    child.once("close", (code, signal) => {
      void stdoutDone.then(() => {
        resolve({ code, signal, stderrTail: stderrTail.trim() });
      });
    });
  });
}
