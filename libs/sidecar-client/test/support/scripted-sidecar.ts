import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { encodeFrame, FrameDecoder, type FrameBody } from "../../src/frame.js";

/**
 * A scripted peer on a real Unix socket: it records every request and lets each test decide
 * what to answer and when, which the real sidecar cannot be made to do (out-of-order replies,
 * malformed bodies, silence).
 */
export class ScriptedSidecar {
  readonly requests: FrameBody[] = [];
  connection: Socket | undefined;
  onRequest: (request: FrameBody, peer: ScriptedSidecar) => void = () => undefined;
  readonly #waiters: (() => void)[] = [];

  private constructor(
    readonly server: Server,
    readonly socketPath: string,
  ) {}

  static async start(dir: string): Promise<ScriptedSidecar> {
    const socketPath = join(dir, "fake.sock");
    const server = createServer();
    const peer = new ScriptedSidecar(server, socketPath);
    server.on("connection", (socket) => {
      peer.connection = socket;
      const decoder = new FrameDecoder();
      socket.on("data", (chunk) => {
        decoder.push(chunk);
        for (const body of decoder.frames()) {
          peer.requests.push(body);
          peer.onRequest(body, peer);
          for (const wake of peer.#waiters.splice(0)) wake();
        }
      });
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return peer;
  }

  send(body: object): void {
    this.connection?.write(encodeFrame(body));
  }

  sendRaw(bytes: Uint8Array): void {
    this.connection?.write(bytes);
  }

  async waitForRequests(n: number): Promise<void> {
    while (this.requests.length < n) {
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
      });
    }
  }

  async stop(): Promise<void> {
    this.connection?.destroy();
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }
}
