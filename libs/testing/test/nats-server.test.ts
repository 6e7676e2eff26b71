import { existsSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MissingPrerequisiteError, startNatsServer, type NatsServerHandle } from "../src/index.js";

const started: NatsServerHandle[] = [];

async function start(): Promise<NatsServerHandle> {
  const server = await startNatsServer();
  started.push(server);
  return server;
}

afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

/** Creates a stream holding `count` messages. */
async function seed(url: string, count: number): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "WORK", subjects: ["work.>"] });
    const js = jetstream(nc);
    for (let i = 0; i < count; i++) await js.publish("work.embed", `item ${i}`);
  } finally {
    await nc.close();
  }
}

async function storedMessages(url: string): Promise<number> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    return (await jsm.streams.info("WORK")).state.messages;
  } finally {
    await nc.close();
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => {
      resolve(false);
    });
  });
}

describe("startNatsServer", { timeout: 60_000 }, () => {
  it("starts a JetStream-enabled server on a free port with its own store", async () => {
    const server = await start();
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(existsSync(server.storeDir)).toBe(true);
    await seed(server.url, 3);
    await expect(storedMessages(server.url)).resolves.toBe(3);
  });

  it("gives concurrent servers distinct ports and stores", async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(a.port).not.toBe(b.port);
    expect(a.storeDir).not.toBe(b.storeDir);
  });

  it.each(["SIGTERM", "SIGKILL"] as const)(
    "restart after %s keeps port and store and serves again",
    async (signal) => {
      const server = await start();
      await seed(server.url, 5);
      const { port, pid } = server;
      await server.restart({ signal });
      expect(server.port).toBe(port);
      expect(server.pid).not.toBe(pid);
      await expect(storedMessages(server.url)).resolves.toBe(5);
    },
  );

  it("a connected client reconnects to the same URL after a restart", async () => {
    const server = await start();
    await seed(server.url, 1);
    const nc = await connect({
      servers: server.url,
      reconnectTimeWait: 50,
      maxReconnectAttempts: -1,
    });
    try {
      const reconnected = (async () => {
        for await (const status of nc.status()) if (status.type === "reconnect") return true;
        return false;
      })();
      await server.restart();
      await expect(reconnected).resolves.toBe(true);
      const ack = await jetstream(nc).publish("work.embed", "after restart");
      expect(ack.seq).toBe(2);
    } finally {
      await nc.close();
    }
  });

  it("stop kills the server and removes its store", async () => {
    const server = await start();
    await server.stop();
    expect(existsSync(server.storeDir)).toBe(false);
    await expect(accepts(server.port)).resolves.toBe(false);
    await server.stop();
    await expect(server.restart()).rejects.toThrow("stopped");
  });

  it("fails with the path and the setup command when the binary is missing", async () => {
    vi.stubEnv("SHOAL_NATS_SERVER", "/nonexistent/nats-server");
    const error = await startNatsServer().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPrerequisiteError);
    expect((error as Error).message).toContain("/nonexistent/nats-server");
    expect((error as Error).message).toContain("bash tools/setup/bootstrap.sh");
  });

  it("surfaces the server's own output when it refuses to start", async () => {
    const error = await startNatsServer({ args: ["--no-such-flag"] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/exited with code \d+ before "Server is ready"/);
    expect((error as Error).message).toContain("no-such-flag");
  });
});
