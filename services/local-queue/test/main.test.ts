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
import { LocalQueueClient } from "@shoal/local-queue";
import {
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

// The queue runs as its own process from its real `main`, as a host runs it beside its
// workers; the tests play those workers over its socket and watch JetStream for what it
// returns. Most consumers wait a minute before redelivering, so an item back within seconds
// was returned by the queue (a NAK), not redelivered after the ack wait.
const LONG_ACK_WAIT_MS = 60_000;

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let stream: string;
let dir: string;
let model = 0;
let key: string;
let consumer: string;
let socketPath: string;
const running: ServiceHandle[] = [];
const clients: LocalQueueClient[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  stream = await ensureWorkStream(jsm);
  dir = await tempDir("lq-service");
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

// Every test gets its own model (consumer and subjects) and socket.
beforeEach(() => {
  model++;
  key = `m${model}`;
  socketPath = join(dir, `q${model}.sock`);
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const q of running.splice(0)) await q.stop();
});

async function startQueue(env: Readonly<Record<string, string>>): Promise<ServiceHandle> {
  const queue = await startService("local-queue", {
    env: { NATS_URL: nats.url, SHOAL_LOCAL_QUEUE_SOCKET: socketPath, ...env },
    readyMessage: "local queue listening",
  });
  running.push(queue);
  return queue;
}

/** A worker's connection to the queue. */
function worker(): LocalQueueClient {
  const client = new LocalQueueClient({ socketPath });
  clients.push(client);
  return client;
}

/** Publishes `n` items and pulls them, as the worker that over-pulled them would. */
async function pulled(n: number, ackWaitMs = LONG_ACK_WAIT_MS): Promise<WorkMessage[]> {
  consumer = await ensureModelConsumer(jsm, stream, key, { ackWaitMs });
  const js = jetstream(nc);
  for (let i = 0; i < n; i++) await js.publish(workSubject(key, 16), `item ${i}`);
  const msgs = await pull(nc, stream, consumer, { batch: n });
  expect(msgs).toHaveLength(n);
  return msgs;
}

/** Up to `batch` items JetStream delivers again within `expiresMs`, acked. */
async function redelivered(batch: number, expiresMs = 5_000): Promise<WorkMessage[]> {
  const msgs = await pull(nc, stream, consumer, { batch, expiresMs });
  for (const m of msgs) m.ack();
  return msgs;
}

const text = (m: { data: Uint8Array }): string => new TextDecoder().decode(m.data);

/** The queue's JSON log line whose `msg` is `msg`. */
function logged(queue: ServiceHandle, msg: string): Record<string, unknown> | undefined {
  return queue
    .output()
    .split("\n")
    .map((line) => line.replace(/^\[stdout\] /, ""))
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((entry) => entry["msg"] === msg);
}

describe("the local-queue process", () => {
  it("hands what one worker puts to another on its socket, up to SHOAL_LOCAL_QUEUE_MAX_ITEMS", async () => {
    await startQueue({ SHOAL_LOCAL_QUEUE_MAX_ITEMS: "2", SHOAL_LOCAL_QUEUE_HOLD_MS: "120000" });
    const parts = (await pulled(3)).map((m) => m.handOff());
    expect(await worker().put(key, parts)).toBe(2);
    // The refused one stays the putter's, who puts it back itself.
    WorkMessage.fromParts(nc, parts[2] as (typeof parts)[number]).nak();
    const taken = await worker().take(key, { max: 10 });
    expect(taken.map(text)).toEqual(["item 0", "item 1"]);
    for (const p of taken) WorkMessage.fromParts(nc, p).ack();
    expect((await redelivered(1)).map(text)).toEqual(["item 2"]);
  });

  it("returns what no worker took within SHOAL_LOCAL_QUEUE_HOLD_MS to JetStream", async () => {
    await startQueue({ SHOAL_LOCAL_QUEUE_HOLD_MS: "1000" });
    const parts = (await pulled(2)).map((m) => m.handOff());
    const putAt = performance.now();
    expect(await worker().put(key, parts)).toBe(2);
    const back = await redelivered(2);
    // Not before the hold is over (a lower bound, which a slow machine only makes longer).
    expect(performance.now() - putAt).toBeGreaterThanOrEqual(1000);
    expect(back.map(text)).toEqual(["item 0", "item 1"]);
    expect(back.map((m) => m.deliveryCount)).toEqual([2, 2]);
  });

  it("keeps what it holds alive every SHOAL_LOCAL_QUEUE_PROGRESS_MS, past the ack wait", async () => {
    await startQueue({
      SHOAL_LOCAL_QUEUE_HOLD_MS: "120000",
      SHOAL_LOCAL_QUEUE_PROGRESS_MS: "250",
    });
    const ackWaitMs = 1_000;
    await worker().put(
      key,
      (await pulled(1, ackWaitMs)).map((m) => m.handOff()),
    );
    // Held for over twice the ack wait: without in-progress JetStream would have redelivered it.
    expect(await redelivered(1, 2.5 * ackWaitMs)).toEqual([]);
    const [parts] = await worker().take(key, { max: 1 });
    if (parts === undefined) throw new Error("the held item is gone");
    const taken = WorkMessage.fromParts(nc, parts);
    expect(taken.deliveryCount).toBe(1);
    taken.ack();
  });

  it("returns everything it holds to JetStream on SIGTERM and exits cleanly", async () => {
    const queue = await startQueue({ SHOAL_LOCAL_QUEUE_HOLD_MS: "120000" });
    await worker().put(
      key,
      (await pulled(2)).map((m) => m.handOff()),
    );
    expect(await queue.stop()).toEqual({ code: 0, signal: null });
    expect(logged(queue, "local queue stopped")).toMatchObject({ held: 0, returned: 2 });
    const back = await redelivered(2);
    expect(back.map((m) => m.deliveryCount)).toEqual([2, 2]);
  });

  it("refuses to start on a socket another queue serves, and leaves that one serving", async () => {
    await startQueue({});
    await expect(startQueue({})).rejects.toThrow(/already listens/);
    expect((await worker().stats()).held).toBe(0);
  });
});
