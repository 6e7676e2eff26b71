import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { join } from "node:path";
import { ManagedProcess, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  WorkMessage,
  ensureModelConsumer,
  ensureWorkStream,
  pull,
  workSubject,
} from "../src/index.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let js: JetStreamClient;
let stream: string;
let consumer: string;
let model = 0;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  stream = await ensureWorkStream(await jetstreamManager(nc));
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

// A fresh model (own consumer and subjects) per test keeps the tests independent.
beforeEach(async () => {
  model++;
  consumer = await ensureModelConsumer(await jetstreamManager(nc), stream, `m${model}`, {
    ackWaitMs: 30_000,
  });
});

async function publish(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await js.publish(workSubject(`m${model}`, 16), `item ${i}`);
}

describe("pull", () => {
  it("hands over what was delivered while its process was paused past the pull's expiry", async () => {
    const child = ManagedProcess.spawn(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "stalled-pull.ts"), nats.url, stream, consumer],
      { env: process.env, stdin: "ignore" },
    );
    await child.waitForLine("stdout", (l) => l === "pulling", 30_000, "the pull");
    process.kill(child.pid, "SIGSTOP");
    try {
      await publish(1);
      // Past the pull's expiry (1 s) and its client-side guard (2 s more) while paused.
      await new Promise((r) => setTimeout(r, 4_000));
    } finally {
      process.kill(child.pid, "SIGCONT");
    }
    const line = await child.waitForLine("stdout", (l) => l.startsWith("{"), 30_000, "the count");
    expect(JSON.parse(line)).toEqual({ messages: 1 });
    await child.exited;
    // Taken and acknowledged by the paused process: nothing is left for a redelivery.
    const info = await (await jetstreamManager(nc)).consumers.info(stream, consumer);
    expect([info.num_pending, info.num_ack_pending]).toEqual([0, 0]);
  }, 60_000);

  it("takes only what is queued with no_wait, and reports what is still pending", async () => {
    await publish(5);
    const first = await pull(nc, stream, consumer, { batch: 3 });
    expect(first.map((m) => new TextDecoder().decode(m.data))).toEqual([
      "item 0",
      "item 1",
      "item 2",
    ]);
    expect(first.map((m) => m.pending)).toEqual([4, 3, 2]);
    const rest = await pull(nc, stream, consumer, { batch: 10 });
    expect(rest).toHaveLength(2);
    expect(rest.at(-1)?.pending).toBe(0);
    const started = performance.now();
    expect(await pull(nc, stream, consumer, { batch: 10 })).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
    for (const m of [...first, ...rest]) m.ack();
  });

  it("long-polls until work arrives", async () => {
    const waiting = pull(nc, stream, consumer, { batch: 1, expiresMs: 5_000 });
    await new Promise((r) => setTimeout(r, 200));
    await publish(1);
    const got = await waiting;
    expect(got).toHaveLength(1);
    got[0]?.ack();
  });

  it("ends an idle long poll when it expires", async () => {
    expect(await pull(nc, stream, consumer, { batch: 1, expiresMs: 1_000 })).toEqual([]);
  });

  it("redelivers a NAKed item at once, counting the delivery", async () => {
    await publish(1);
    const [first] = await pull(nc, stream, consumer, { batch: 1 });
    expect(first?.deliveryCount).toBe(1);
    first?.nak();
    const [again] = await pull(nc, stream, consumer, { batch: 1, expiresMs: 2_000 });
    expect(again?.deliveryCount).toBe(2);
    expect(again?.streamSequence).toBe(first?.streamSequence);
    again?.ack();
    again?.nak();
    expect(again?.settled).toBe(true);
    expect(await pull(nc, stream, consumer, { batch: 1 })).toEqual([]);
  });

  it("hands a delivery to another connection, which acks it without a redelivery", async () => {
    const h = headers();
    h.append("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    h.append("Shoal-Multi", "a");
    h.append("Shoal-Multi", "b");
    await js.publish(workSubject(`m${model}`, 16), "handed", { headers: h });
    const [first] = await pull(nc, stream, consumer, { batch: 1 });
    if (first === undefined) throw new Error("nothing pulled");
    const parts = first.handOff();
    expect(first.settled).toBe(true);
    expect(() => first.handOff()).toThrow(/already settled/);
    // Settled here: in-progress and NAK from the giver are no-ops, so only the taker decides.
    first.nak();
    const other = await connect({ servers: nats.url });
    try {
      const taken = WorkMessage.fromParts(other, parts);
      expect(new TextDecoder().decode(taken.data)).toBe("handed");
      expect(taken.deliveryCount).toBe(1);
      expect(taken.streamSequence).toBe(first.streamSequence);
      expect(taken.headers?.get("traceparent")).toBe(h.get("traceparent"));
      expect(taken.headers?.values("Shoal-Multi")).toEqual(["a", "b"]);
      taken.ack();
      await other.flush();
      const jsm = await jetstreamManager(nc);
      // The server applies acks asynchronously; wait for this one rather than for a fixed time.
      let info = await jsm.consumers.info(stream, consumer);
      for (let i = 0; i < 100 && info.num_ack_pending > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        info = await jsm.consumers.info(stream, consumer);
      }
      expect(info.num_ack_pending).toBe(0);
      expect(info.num_pending).toBe(0);
      expect(info.num_redelivered).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("refuses parts whose reply is not an ack subject", () => {
    expect(() =>
      WorkMessage.fromParts(nc, {
        subject: "s",
        reply: "_INBOX.x",
        headers: [],
        data: new Uint8Array(),
      }),
    ).toThrow(/not a JetStream ack subject/);
  });
  it("ends within its grace period when the server is away, draining nothing", async () => {
    await nats.restart({
      whileDown: async () => {
        const started = performance.now();
        expect(await pull(nc, stream, consumer, { batch: 5, expiresMs: 100 })).toEqual([]);
        // expiry 0.1 s + guard 2 s + at most 2 s for a drain no server answers.
        expect(performance.now() - started).toBeLessThan(6_000);
      },
    });
    // The other tests of this file ran before: none is left to find the server restarting.
  }, 60_000);
});
