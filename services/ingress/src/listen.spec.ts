import { connect, type Socket } from "node:net";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { listenDual, type DualServer } from "./listen.js";

// The port's shutdown and its hold on connections that never send a request: a socket that
// is neither HTTP/1.1 nor HTTP/2 yet must not keep the server (and so a rolling restart)
// waiting, nor stay open for ever.

let server: DualServer | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.length = 0;
  await server?.close(0);
  server = undefined;
});

async function open(): Promise<Socket> {
  if (server === undefined) throw new Error("no server");
  const socket = connect(server.port, "127.0.0.1");
  sockets.push(socket);
  await once(socket, "connect");
  return socket;
}

async function closedWithin(ms: number, closing: Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, ms);
  });
  try {
    return await Promise.race([closing.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("listenDual", () => {
  it("closes at once when a client connected and hung up without a byte", async () => {
    server = await listenDual((_req, res) => res.end("ok"), 0, "127.0.0.1", {
      firstBytesTimeoutMs: 60_000,
    });
    const socket = await open();
    socket.end();
    await new Promise((r) => setTimeout(r, 50));
    const s = server;
    server = undefined;
    expect(await closedWithin(2_000, s.close(60_000))).toBe(true);
  });

  it("closes at once over a connection that has sent nothing yet", async () => {
    server = await listenDual((_req, res) => res.end("ok"), 0, "127.0.0.1", {
      firstBytesTimeoutMs: 60_000,
    });
    const socket = await open();
    const s = server;
    server = undefined;
    expect(await closedWithin(2_000, s.close(60_000))).toBe(true);
    await once(socket, "close");
  });

  it("drops a connection that sends nothing for the first-bytes timeout", async () => {
    server = await listenDual((_req, res) => res.end("ok"), 0, "127.0.0.1", {
      firstBytesTimeoutMs: 200,
    });
    const socket = await open();
    const started = Date.now();
    await once(socket, "close");
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("lets a request in progress finish, then closes", async () => {
    let answer: (() => void) | undefined;
    server = await listenDual(
      (_req, res) => {
        answer = () => res.end("late");
      },
      0,
      "127.0.0.1",
      { firstBytesTimeoutMs: 60_000 },
    );
    const socket = await open();
    socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
    let received = "";
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    while (answer === undefined) await new Promise((r) => setTimeout(r, 10));
    const s = server;
    server = undefined;
    const closing = s.close(60_000);
    answer();
    expect(await closedWithin(2_000, closing)).toBe(true);
    if (!socket.closed) await once(socket, "close");
    expect(received).toContain("late");
  });
});
