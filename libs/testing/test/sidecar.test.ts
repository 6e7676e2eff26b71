import { existsSync } from "node:fs";
import { chmod, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  MissingPrerequisiteError,
  minilmDir,
  startSidecar,
  tempDir,
  type SidecarHandle,
} from "../src/index.js";

let scripts: string;
const started: SidecarHandle[] = [];

beforeAll(async () => {
  scripts = await tempDir("fake-sidecar");
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

afterAll(async () => {
  await rm(scripts, { recursive: true, force: true });
});

/** A stand-in executable, to drive the launcher's failure paths the real sidecar never takes on cue. */
async function script(name: string, body: string): Promise<string> {
  const path = join(scripts, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

describe("startSidecar launcher", { timeout: 30_000 }, () => {
  it("passes socket, models and --exit-on-stdin-eof, and resolves on the ready line", async () => {
    // Echoes its arguments, announces the socket, then lives until its stdin closes.
    const binary = await script(
      "echo-args",
      'echo "args: $*" >&2\necho "ready $2"\necho "SHOAL_TEST_VAR=$SHOAL_TEST_VAR" >&2\nexec cat >/dev/null',
    );
    const sidecar = await startSidecar({
      binary,
      models: { minilm: "/models/minilm", other: "/models/other" },
      env: { SHOAL_TEST_VAR: "forty-two" },
    });
    started.push(sidecar);
    expect(sidecar.socketPath).toMatch(/\/sidecar\.sock$/);
    expect(sidecar.pid).toBeGreaterThan(0);
    await vi.waitFor(() => {
      expect(sidecar.output()).toContain("SHOAL_TEST_VAR=forty-two");
    });
    expect(sidecar.output()).toContain(
      `args: --socket ${sidecar.socketPath} --model minilm=/models/minilm --model other=/models/other --exit-on-stdin-eof`,
    );
    await sidecar.stop();
    expect(existsSync(join(sidecar.socketPath, ".."))).toBe(false);
  });

  it("kill sends the signal and exited reports it", async () => {
    const binary = await script("sleeper", 'echo "ready $2"\nexec sleep 60');
    const sidecar = await startSidecar({ binary, models: {} });
    started.push(sidecar);
    sidecar.kill();
    await expect(sidecar.exited).resolves.toEqual({ code: null, signal: "SIGKILL" });
  });

  it("fails with the exit status and stderr when the sidecar dies before ready", async () => {
    const binary = await script(
      "dies",
      'echo \'{"level":"ERROR","msg":"load_failed: no config.json"}\' >&2\nexit 3',
    );
    const error = await startSidecar({ binary, models: { m: "/nowhere" } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain("exited with code 3 before `ready <socket>`");
    expect((error as Error).message).toContain("load_failed: no config.json");
  });

  it("fails after readyTimeoutMs when the sidecar never gets ready", async () => {
    const binary = await script("silent", 'echo "loading..." >&2\nexec sleep 60');
    const error = await startSidecar({ binary, models: {}, readyTimeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect((error as Error).message).toContain("no `ready <socket>` within 300 ms");
    expect((error as Error).message).toContain("loading...");
  });

  it("fails when the ready line names another socket", async () => {
    const binary = await script("liar", 'echo "ready /tmp/elsewhere.sock"\nexec sleep 60');
    await expect(startSidecar({ binary, models: {} })).rejects.toThrow(
      'announced "ready /tmp/elsewhere.sock"',
    );
  });

  it("fails with the path and the setup command when the binary is missing", async () => {
    vi.stubEnv("SHOAL_SIDECAR_BIN", "/nonexistent/shoal-sidecar");
    const error = await startSidecar({ models: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPrerequisiteError);
    expect((error as Error).message).toContain("/nonexistent/shoal-sidecar");
    expect((error as Error).message).toContain("bash tools/setup/bootstrap.sh");
  });
});

describe("startSidecar with the real binary", { timeout: 180_000 }, () => {
  it("preloads all-MiniLM-L6-v2, serves a socket, and stops cleanly", async () => {
    const sidecar = await startSidecar({ models: { minilm: minilmDir() } });
    started.push(sidecar);
    expect(existsSync(sidecar.socketPath)).toBe(true);
    await sidecar.stop();
    await expect(sidecar.exited).resolves.toEqual({ code: 0, signal: null });
  });
});
