import { connect as connectSocket, type Socket } from "node:net";
import { join } from "node:path";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  WorkMessage,
  ensureModelConsumer,
  ensureWorkStream,
  pull,
  workSubject,
} from "@shoal/jetstream";
import { encodeFrame, FrameDecoder, type FrameBody } from "@shoal/sidecar-client";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, tempDir, type NatsServerHandle } from "@shoal/testing";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  LocalQueueClient,
  LocalQueueError,
  LocalQueueServer,
  LocalQueueUnavailableError,
  type LocalQueueServerOptions,
} from "../src/index.js";

let nats: NatsServerHandle;
let holderNc: NatsConnection;
let takerNc: NatsConnection;
let jsm: JetStreamManager;
let stream: string;
let dir: string;
let model = 0;
let key: string;
let consumer: string;
const opened: { close(): Promise<void> }[] = [];
const logger = createLogger({ service: "test", level: "warn" });

beforeAll(async () => {
  nats = await startNatsServer();
  holderNc = await connect({ servers: nats.url });
  takerNc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(holderNc);
  stream = await ensureWorkStream(jsm);
  dir = await tempDir("lq");
});

afterAll(async () => {
  await takerNc.close();
  await holderNc.close();
  await nats.stop();
});

// Every test gets its own model (consumer and subjects) and socket.
beforeEach(async () => {
  model++;
  key = `m${model}`;
  consumer = await ensureModelConsumer(jsm, stream, key, { ackWaitMs: 1_500 });
});

afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function startQueue(options: Partial<LocalQueueServerOptions> = {}): Promise<{
  server: LocalQueueServer;
  client: LocalQueueClient;
  socketPath: string;
}> {
  const socketPath = join(dir, `q${model}.sock`);
  const server = await LocalQueueServer.listen({ socketPath, nc: holderNc, logger, ...options });
  opened.push(server);
  const client = new LocalQueueClient({ socketPath });
  opened.push(client);
  return { server, client, socketPath };
}

/** Publishes `n` items and pulls them, as the worker that over-pulled them would. */
async function pulled(n: number): Promise<WorkMessage[]> {
  const js = jetstream(holderNc);
  for (let i = 0; i < n; i++) await js.publish(workSubject(key, 16), `item ${i}`);
  const msgs = await pull(holderNc, stream, consumer, { batch: n });
  expect(msgs).toHaveLength(n);
  return msgs;
}

const text = (data: Uint8Array): string => new TextDecoder().decode(data);

async function consumerInfo(until: (i: { num_ack_pending: number }) => boolean = () => true) {
  let info = await jsm.consumers.info(stream, consumer);
  for (let i = 0; i < 100 && !until(info); i++) {
    await new Promise((r) => setTimeout(r, 20));
    info = await jsm.consumers.info(stream, consumer);
  }
  return info;
}

describe("local queue", () => {
  it("hands items to another local worker, who acks them: no redelivery", async () => {
    const { client } = await startQueue();
    const msgs = await pulled(3);
    expect(
      await client.put(
        key,
        msgs.map((m) => m.handOff()),
      ),
    ).toBe(3);
    const taker = new LocalQueueClient({ socketPath: join(dir, `q${model}.sock`) });
    opened.push(taker);
    expect(await taker.take("other-model", { max: 10 })).toEqual([]);
    const parts = await taker.take(key, { max: 2 });
    expect(parts.map((p) => text(p.data))).toEqual(["item 0", "item 1"]);
    const rest = await taker.take(key, { max: 10 });
    expect(rest.map((p) => text(p.data))).toEqual(["item 2"]);
    for (const p of [...parts, ...rest]) WorkMessage.fromParts(takerNc, p).ack();
    await takerNc.flush();
    const info = await consumerInfo((i) => i.num_ack_pending === 0);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
    expect(await client.stats()).toMatchObject({ held: 0, accepted: 3, handed: 3, returned: 0 });
  });

  it("answers a waiting take as soon as items are put", async () => {
    const { client } = await startQueue();
    const started = performance.now();
    const waiting = client.take(key, { max: 5, waitMs: 20_000 });
    await new Promise((r) => setTimeout(r, 50));
    const msgs = await pulled(2);
    expect(
      await client.put(
        key,
        msgs.map((m) => m.handOff()),
      ),
    ).toBe(2);
    const got = await waiting;
    expect(got.map((p) => text(p.data))).toEqual(["item 0", "item 1"]);
    // Well before the wait ran out: the put answered it.
    expect(performance.now() - started).toBeLessThan(20_000);
    for (const p of got) WorkMessage.fromParts(takerNc, p).ack();
  });

  it("ends a waiting take with nothing when it is cancelled or its wait runs out", async () => {
    const { client } = await startQueue();
    const controller = new AbortController();
    const waiting = client.take(key, { max: 5, waitMs: 20_000, signal: controller.signal });
    await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    expect(await waiting).toEqual([]);
    expect(await client.take(key, { max: 5, waitMs: 30 })).toEqual([]);
  });

  it("returns what no local worker took within the hold time to JetStream", async () => {
    const { client, server } = await startQueue({ holdMs: 50 });
    const msgs = await pulled(2);
    await client.put(
      key,
      msgs.map((m) => m.handOff()),
    );
    const again = await pull(takerNc, stream, consumer, { batch: 2, expiresMs: 5_000 });
    expect(again.map((m) => text(m.data))).toEqual(["item 0", "item 1"]);
    expect(again.map((m) => m.deliveryCount)).toEqual([2, 2]);
    expect(server.stats()).toMatchObject({ held: 0, returned: 2 });
    for (const m of again) m.ack();
  });

  it("keeps held items alive past the ack wait", async () => {
    // Ack wait 1.5 s; held for 3.5 s with in-progress every 300 ms.
    const { client } = await startQueue({ holdMs: 60_000, progressIntervalMs: 300 });
    const msgs = await pulled(1);
    await client.put(
      key,
      msgs.map((m) => m.handOff()),
    );
    await new Promise((r) => setTimeout(r, 3_500));
    expect(await pull(takerNc, stream, consumer, { batch: 1 })).toEqual([]);
    const [parts] = await client.take(key, { max: 1 });
    if (parts === undefined) throw new Error("held item gone");
    const taken = WorkMessage.fromParts(takerNc, parts);
    expect(taken.deliveryCount).toBe(1);
    taken.ack();
    await takerNc.flush();
    expect((await consumerInfo((i) => i.num_ack_pending === 0)).num_redelivered).toBe(0);
  });

  it("is bounded: a full queue accepts a prefix and the putter keeps the rest", async () => {
    const { client, server } = await startQueue({ maxItems: 2 });
    const msgs = await pulled(3);
    const parts = msgs.map((m) => m.handOff());
    expect(await client.put(key, parts)).toBe(2);
    expect(server.stats()).toMatchObject({ held: 2, accepted: 2, refused: 1 });
    // The refused one is still the putter's: it NAKs it itself.
    WorkMessage.fromParts(holderNc, parts[2] as (typeof parts)[number]).nak();
    const back = await pull(takerNc, stream, consumer, { batch: 1, expiresMs: 5_000 });
    expect(back.map((m) => text(m.data))).toEqual(["item 2"]);
    back[0]?.ack();
  });

  it("returns everything it holds to JetStream on close", async () => {
    const { client, server } = await startQueue({ holdMs: 60_000 });
    const msgs = await pulled(2);
    await client.put(
      key,
      msgs.map((m) => m.handOff()),
    );
    await server.close();
    const back = await pull(takerNc, stream, consumer, { batch: 2, expiresMs: 5_000 });
    expect(back).toHaveLength(2);
    for (const m of back) m.ack();
    await expect(client.put(key, [])).resolves.toBe(0);
  });

  it("refuses a second queue on a live socket, and replaces a stale socket file", async () => {
    const { socketPath, server } = await startQueue();
    await expect(LocalQueueServer.listen({ socketPath, nc: holderNc, logger })).rejects.toThrow(
      /already listens/,
    );
    await server.close();
    const again = await LocalQueueServer.listen({ socketPath, nc: holderNc, logger });
    opened.push(again);
    const client = new LocalQueueClient({ socketPath });
    opened.push(client);
    expect((await client.stats()).held).toBe(0);
  });

  it("fails calls with a typed error when no queue listens", async () => {
    const client = new LocalQueueClient({ socketPath: join(dir, "nobody.sock") });
    opened.push(client);
    await expect(client.take(key, { max: 1 })).rejects.toBeInstanceOf(LocalQueueUnavailableError);
    // Fails fast meanwhile, without a connect per call.
    await expect(client.put(key, [])).resolves.toBe(0);
    await expect(client.stats()).rejects.toBeInstanceOf(LocalQueueUnavailableError);
  });
});

/** A raw connection for hostile input: what comes back, frame by frame. */
async function rawConnection(socketPath: string): Promise<{
  socket: Socket;
  next(): Promise<FrameBody>;
  closed: Promise<void>;
}> {
  const socket = connectSocket(socketPath);
  await new Promise((r) => socket.once("connect", r));
  const decoder = new FrameDecoder();
  const bodies: FrameBody[] = [];
  const waiters: ((b: FrameBody) => void)[] = [];
  socket.on("data", (chunk: Buffer) => {
    decoder.push(chunk);
    for (const b of decoder.frames()) {
      const w = waiters.shift();
      if (w === undefined) bodies.push(b);
      else w(b);
    }
  });
  const closed = new Promise<void>((r) => {
    socket.once("close", () => {
      r();
    });
  });
  return {
    socket,
    closed,
    next: () => {
      const b = bodies.shift();
      return b === undefined ? new Promise((r) => waiters.push(r)) : Promise.resolve(b);
    },
  };
}

describe("local queue hostile input", () => {
  it.each([
    [{ id: 7, op: "nope" }, 7, /unknown op/],
    [{ op: "stats" }, 0, /id must be/],
    [{ id: 8, op: "take", model: "a.b", max: 1, wait_ms: 0 }, 8, /model must be/],
    [{ id: 9, op: "take", model: "m", max: 0, wait_ms: 0 }, 9, /max must be/],
    [{ id: 10, op: "take", model: "m", max: 1, wait_ms: 10_000_000 }, 10, /wait_ms must be/],
    [{ id: 11, op: "put", model: "m", items: [] }, 11, /items must be/],
    [{ id: 12, op: "put", model: "m", items: ["x"] }, 12, /items\[0\] must be a map/],
    [
      {
        id: 13,
        op: "put",
        model: "m",
        items: [{ subject: "s", reply: "_INBOX.x", headers: [], data: new Uint8Array() }],
      },
      13,
      /reply must be a JetStream ack subject/,
    ],
    [
      {
        id: 14,
        op: "put",
        model: "m",
        items: [{ subject: "s", reply: "$JS.ACK.x", headers: [], data: new Uint8Array() }],
      },
      14,
      /not a JetStream ack subject|unrecognised/,
    ],
    [
      {
        id: 15,
        op: "put",
        model: "m",
        items: [
          {
            subject: "s",
            reply: "$JS.ACK.S.C.1.2.3.4.5",
            headers: [[1, 2]],
            data: new Uint8Array(),
          },
        ],
      },
      15,
      /headers must hold/,
    ],
    [
      {
        id: 16,
        op: "put",
        model: "m",
        items: [{ subject: "s", reply: "$JS.ACK.S.C.1.2.3.4.5", headers: [], data: "text" }],
      },
      16,
      /data must be bin/,
    ],
  ])("refuses %j with bad_request and keeps the connection", async (body, id, message) => {
    const { socketPath, server } = await startQueue();
    const raw = await rawConnection(socketPath);
    raw.socket.write(encodeFrame(body));
    const answer = await raw.next();
    expect(answer).toMatchObject({ id, ok: false, code: "bad_request" });
    expect(String(answer["message"])).toMatch(message);
    raw.socket.write(encodeFrame({ id: 99, op: "stats" }));
    expect(await raw.next()).toMatchObject({ id: 99, ok: true, held: 0 });
    expect(server.stats().accepted).toBe(0);
    raw.socket.destroy();
  });

  it("answers a body that is not a MessagePack map with bad_frame and reads on", async () => {
    const { socketPath } = await startQueue();
    const raw = await rawConnection(socketPath);
    const junk = new Uint8Array([0, 0, 0, 3, 0xc1, 0xc1, 0xc1]);
    raw.socket.write(junk);
    raw.socket.write(encodeFrame([1, 2, 3]));
    expect(await raw.next()).toMatchObject({ id: 0, ok: false, code: "bad_frame" });
    expect(await raw.next()).toMatchObject({ id: 0, ok: false, code: "bad_frame" });
    raw.socket.write(encodeFrame({ id: 5, op: "stats" }));
    expect(await raw.next()).toMatchObject({ id: 5, ok: true });
    raw.socket.destroy();
  });

  it("closes the connection after an oversized length prefix, naming the limit", async () => {
    const { socketPath } = await startQueue({ maxFrameBytes: 1024 });
    const raw = await rawConnection(socketPath);
    raw.socket.write(new Uint8Array([0x7f, 0xff, 0xff, 0xff]));
    const answer = await raw.next();
    expect(answer).toMatchObject({ id: 0, ok: false, code: "frame_too_large" });
    expect(String(answer["message"])).toMatch(/1024/);
    await raw.closed;
  });

  it("refuses to send a put larger than the frame limit, before writing it", async () => {
    const { socketPath } = await startQueue();
    const client = new LocalQueueClient({ socketPath, maxFrameBytes: 64 });
    opened.push(client);
    const parts = {
      subject: "s",
      reply: "$JS.ACK.S.C.1.2.3.4.5",
      headers: [],
      data: new Uint8Array(100),
    };
    await expect(client.put(key, [parts])).rejects.toBeInstanceOf(LocalQueueError);
  });
});
