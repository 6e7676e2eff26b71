import { randomBytes } from "node:crypto";
import type { ObjectStore } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { BlobUploader, ensureBlobBucket, fetchBlob } from "@shoal/blobs";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningBlobOffloader } from "../src/run.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: ObjectStore;
let offloader: RunningBlobOffloader;
let uploader: BlobUploader;

beforeAll(async () => {
  nats = await startNatsServer();
  offloader = await run({
    natsServers: nats.url,
    ttlMs: 1_000,
    sweepIntervalMs: 100,
    logger: createLogger({ service: "blob-offloader", level: "silent" }),
  });
  nc = await connect({ servers: nats.url });
  store = await ensureBlobBucket(nc);
  uploader = new BlobUploader({ nc });
});

afterAll(async () => {
  await offloader.stop();
  await nc.close();
  await nats.stop();
});

async function stored(name: string): Promise<boolean> {
  const info = await store.info(name);
  return info !== null && !info.deleted;
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the blob offloader service", () => {
  it("stores an upload, serves it, and deletes it when asked", async () => {
    const bytes = randomBytes(3 * 1024 * 1024);
    const info = await uploader.put(bytes);
    expect(Buffer.from(await fetchBlob(store, info)).equals(bytes)).toBe(true);
    uploader.remove([info.name]);
    await eventually(async () => !(await stored(info.name)));
  });

  it("sweeps a blob nobody removes once it is older than the TTL", async () => {
    const info = await uploader.put(randomBytes(1000));
    const storedAt = Date.now();
    expect(await stored(info.name)).toBe(true);
    await eventually(async () => !(await stored(info.name)));
    expect(Date.now() - storedAt).toBeGreaterThanOrEqual(800);
  });
});
