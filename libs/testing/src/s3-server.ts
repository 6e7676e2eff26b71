import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "./free-port.js";
import { ManagedProcess } from "./managed-process.js";
import { s3ServerBinary } from "./paths.js";
import { tempDir } from "./temp-dir.js";

/** A running S3-compatible server (s3s-fs over a temporary directory) owned by a test. */
export interface S3ServerHandle {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** The one set of credentials the server accepts. */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** Creates an empty bucket. */
  createBucket(name: string): Promise<void>;
  /** Stops the server and removes its data. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Starts the pinned s3s-fs on a random free port of 127.0.0.1 with fresh credentials and an
 * empty data directory, resolving once it accepts connections (it logs nothing at start).
 *
 * @throws MissingPrerequisiteError when the binary is missing.
 */
export async function startS3Server(readyTimeoutMs = 15_000): Promise<S3ServerHandle> {
  const binary = s3ServerBinary();
  const root = await tempDir("s3");
  const port = await freePort();
  const credentials = {
    accessKeyId: `shoal-${randomBytes(4).toString("hex")}`,
    secretAccessKey: randomBytes(20).toString("hex"),
  };
  const child = ManagedProcess.spawn(
    binary,
    [
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--access-key",
      credentials.accessKeyId,
      "--secret-key",
      credentials.secretAccessKey,
      root,
    ],
    { env: process.env, stdin: "ignore" },
  );
  try {
    await untilListening(port, readyTimeoutMs, child);
  } catch (error) {
    await child.terminate("SIGKILL");
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    credentials,
    // s3s-fs keeps each bucket as a directory of its root.
    createBucket: (name) => mkdir(join(root, name)).then(() => undefined),
    async stop() {
      if (stopped) return;
      stopped = true;
      await child.terminate();
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function untilListening(port: number, timeoutMs: number, child: ManagedProcess) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => {
        resolve(false);
      });
    });
    if (open) return;
    const exit = child.exit;
    if (exit !== undefined || Date.now() > until) {
      const why = exit === undefined ? `did not listen in ${timeoutMs} ms` : "exited";
      throw new Error(`s3s-fs ${why} (port ${port}):\n${child.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
