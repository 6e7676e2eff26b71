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
  publisher = new StreamPublisher(nc);
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

  it("times out when nothing acknowledges, and keeps working afterwards", async () => {
    // A subscriber that never answers stands in for a stream whose server does not respond.
    const silent = nc.subscribe("silent.subject");
    const short = new StreamPublisher(nc, { timeoutMs: 200 });
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
