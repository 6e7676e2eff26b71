import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { MissingPrerequisiteError, repoRoot, shoalHome } from "@shoal/testing";

/** The Python of the venv tools/setup/python-clients.sh makes, with `openai` and `grpcio`. */
export function clientsPython(): string {
  const venv = process.env["SHOAL_CLIENTS_VENV"] || join(shoalHome(), "venv-clients");
  const python = join(venv, "bin", "python");
  if (!existsSync(python)) {
    throw new MissingPrerequisiteError("Python clients venv", venv, "SHOAL_CLIENTS_VENV");
  }
  return python;
}

/**
 * Runs pytest on `args` as a child process without blocking this process's event loop, which
 * serves the in-process ingress the Python clients are talking to. A run that skipped any test
 * counts as failed (pytest has no switch for it): a skipped client test proves nothing, and a
 * missing package or server feature would otherwise pass unseen.
 */
export function runPytest(
  args: readonly string[],
  url: string,
  env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(clientsPython(), ["-m", "pytest", ...args, "-q", "--color=no"], {
      cwd: repoRoot(),
      env: { ...process.env, ...env, SHOAL_URL: url, PYTHONDONTWRITEBYTECODE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const skipped = /\b(\d+) skipped\b/.exec(output.trimEnd().split("\n").at(-1) ?? "");
      if (skipped !== null && code === 0) {
        resolve({
          code: 1,
          output: `${output}\nrunPytest: ${skipped[1]} skipped; every test must run`,
        });
      } else {
        resolve({ code, output });
      }
    });
  });
}
