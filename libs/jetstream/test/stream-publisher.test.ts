import { jetstreamManager } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  NoStreamError,
  PublishRefusedError,
  PublishTimeoutError,
  StreamPublisher,
  ensureWorkStream,
  workSubject,
} from "../src/index.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let publisher: StreamPublisher;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await ensureWorkStream(await jetstreamManager(nc), { maxMessages: 5 });
  publisher = new StreamPublisher(nc, { retryForMs: 0 });
});

afterAll(async () => {
  publisher.close();
  await nc.close();
  await nats.stop();
});

const data = new Uint8Array([1, 2, 3]);

describe("StreamPublisher", () => {
  it("resolves with the stored sequence, and marks a repeated message id as a duplicate", async () => {
    const subject = workSubject("m", 16);
    const first = await publisher.publish(subject, data, "req:0", headers());
    const again = await publisher.publish(subject, data, "req:0", headers());
    const other = await publisher.publish(subject, data, "req:1", headers());
    expect(first).toEqual({ stream: "SHOAL_WORK", seq: first.seq, duplicate: false });
    expect(again).toEqual({ stream: "SHOAL_WORK", seq: first.seq, duplicate: true });
    expect(other.seq).toBe(first.seq + 1);
  });

  it("settles many publishes in flight at once, each with its own answer", async () => {
    const acks = await Promise.all(
      [0, 1, 2].map((i) =>
        publisher.publish(workSubject("many", 16), data, `many:${i}`, headers()),
      ),
    );
    expect(new Set(acks.map((a) => a.seq)).size).toBe(3);
  });

  it("rejects with streamFull once the stream is at its message limit", async () => {
    const err = await publisher
      .publish(workSubject("m", 16), data, "overflow", headers())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishRefusedError);
    expect((err as PublishRefusedError).streamFull).toBe(true);
  });

  it("rejects a subject no stream takes", async () => {
    await expect(publisher.publish("not.a.stream", data, "x", headers())).rejects.toBeInstanceOf(
      NoStreamError,
    );
  });

  it("keeps trying a publish that is not acknowledged, with its message id, until one is", async () => {
    // A subject no stream takes yet, then one that does: as while a stream's new leader is
    // being elected. The retried publish is stored once.
    const late = new StreamPublisher(nc, { timeoutMs: 200, retryForMs: 5000 });
    const jsm = await jetstreamManager(nc);
    try {
      const subject = "late.stream.subject";
      const stored = late.publish(subject, data, "late:0", headers());
      await new Promise((resolve) => setTimeout(resolve, 400));
      await jsm.streams.add({ name: "LATE", subjects: [subject] });
      expect(await stored).toMatchObject({ stream: "LATE", seq: 1, duplicate: false });
      expect((await jsm.streams.info("LATE")).state.messages).toBe(1);
      const refused = new StreamPublisher(nc, { timeoutMs: 200, retryForMs: 300 });
      await expect(refused.publish("never.stored", data, "z", headers())).rejects.toBeInstanceOf(
        NoStreamError,
      );
      refused.close();
    } finally {
      late.close();
      await jsm.streams.delete("LATE");
    }
  });

  it("times out when nothing acknowledges, and keeps working afterwards", async () => {
    // A subscriber that never answers stands in for a stream whose server does not respond.
    const silent = nc.subscribe("silent.subject");
    const short = new StreamPublisher(nc, { timeoutMs: 200, retryForMs: 0 });
    try {
      await expect(short.publish("silent.subject", data, "y", headers())).rejects.toBeInstanceOf(
        PublishTimeoutError,
      );
    } finally {
      short.close();
      silent.unsubscribe();
    }
  });
});
