import { createHash, randomBytes } from "node:crypto";
import type { ObjectStore } from "@nats-io/obj";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BlobHeaders,
  BlobMissingError,
  BlobRefusedError,
  BlobStoreUnavailableError,
  BlobSubjects,
  BlobUploader,
  CHUNK_BYTES,
  ensureBlobBucket,
  fetchBlob,
  serveBlobs,
  sweepExpired,
  type BlobServer,
} from "../src/index.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: ObjectStore;
let server: BlobServer;
let uploader: BlobUploader;
const logger = createLogger({ service: "blob-test", level: "silent" });

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await ensureBlobBucket(nc);
  server = serveBlobs({
    nc,
    store,
    offloaderId: "t",
    maxBlobBytes: 8 * 1024 * 1024,
    idleTimeoutMs: 500,
    logger,
  });
  uploader = new BlobUploader({ nc, timeoutMs: 5_000 });
});

afterAll(async () => {
  await server.stop();
  await nc.close();
  await nats.stop();
});

/** Whether a blob is in the store: a deleted one keeps a tombstone `info` marked `deleted`. */
async function stored(name: string): Promise<boolean> {
  const info = await store.info(name);
  return info !== null && !info.deleted;
}

/** Blobs in the store now. */
async function live(): Promise<number> {
  return (await store.list()).filter((i) => !i.deleted).length;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("upload, fetch and remove", () => {
  it.each([
    ["empty", 0],
    ["one byte", 1],
    ["exactly one chunk", CHUNK_BYTES],
    ["5 MiB and a bit, many chunks", 5 * 1024 * 1024 + 17],
  ])("round-trips a blob: %s", async (_name, size) => {
    const bytes = randomBytes(size);
    const info = await uploader.put(bytes);
    expect(info.size).toBe(size);
    expect(info.sha256).toBe(sha256(bytes));
    const back = await fetchBlob(store, info);
    expect(Buffer.from(back).equals(bytes)).toBe(true);
    uploader.remove([info.name]);
    await eventually(async () => !(await stored(info.name)));
    await expect(fetchBlob(store, info)).rejects.toBeInstanceOf(BlobMissingError);
  });

  it("refuses a fetch whose reference does not match what is stored", async () => {
    const info = await uploader.put(randomBytes(100));
    await expect(fetchBlob(store, { ...info, sha256: "0".repeat(64) })).rejects.toThrow(
      /not the one referenced/,
    );
    await expect(fetchBlob(store, { ...info, size: 99 })).rejects.toBeInstanceOf(BlobMissingError);
    uploader.remove([info.name]);
  });
});

describe("hostile and failing uploads", () => {
  it("refuses a blob over the limit before any byte is sent", async () => {
    await expect(uploader.put(new Uint8Array(8 * 1024 * 1024 + 1))).rejects.toThrow(
      BlobRefusedError,
    );
    expect(server.uploads).toBe(0);
  });

  it("refuses an open without a valid size", async () => {
    const hdrs = headers();
    hdrs.set(BlobHeaders.size, "-3");
    const reply = await nc.request(BlobSubjects.open, new Uint8Array(0), {
      headers: hdrs,
      timeout: 5_000,
    });
    expect(reply.headers?.get(BlobHeaders.error)).toMatch(/non-negative integer/);
  });

  it("fails an upload that sends more than it declared, and stores nothing", async () => {
    const before = await live();
    const hdrs = headers();
    hdrs.set(BlobHeaders.size, "4");
    const opened = await nc.request(BlobSubjects.open, new Uint8Array(0), {
      headers: hdrs,
      timeout: 5_000,
    });
    const subject = opened.headers?.get(BlobHeaders.upload) ?? "";
    const last = headers();
    last.set(BlobHeaders.last, "1");
    const reply = await nc.request(subject, new Uint8Array(10), { headers: last, timeout: 5_000 });
    expect(reply.headers?.get(BlobHeaders.error)).toMatch(/larger than declared/);
    await eventually(() => Promise.resolve(server.uploads === 0));
    expect(await live()).toBe(before);
  });

  it("abandons an upload that goes quiet, and stores nothing", async () => {
    const before = await live();
    const hdrs = headers();
    hdrs.set(BlobHeaders.size, String(2 * CHUNK_BYTES));
    const opened = await nc.request(BlobSubjects.open, new Uint8Array(0), {
      headers: hdrs,
      timeout: 5_000,
    });
    const subject = opened.headers?.get(BlobHeaders.upload) ?? "";
    await nc.request(subject, new Uint8Array(CHUNK_BYTES), { timeout: 5_000 });
    await eventually(() => Promise.resolve(server.uploads === 0));
    const late = headers();
    late.set(BlobHeaders.last, "1");
    const reply = await nc.request(subject, new Uint8Array(CHUNK_BYTES), {
      headers: late,
      timeout: 5_000,
    });
    expect(reply.headers?.get(BlobHeaders.error)).toMatch(/no such upload/);
    expect(await live()).toBe(before);
  });

  it("reports an unreachable offloader as unavailable", async () => {
    const lonely = await startNatsServer();
    const other = await connect({ servers: lonely.url });
    try {
      const err = await new BlobUploader({ nc: other, timeoutMs: 1_000 })
        .put(new Uint8Array(10))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlobStoreUnavailableError);
    } finally {
      await other.close();
      await lonely.stop();
    }
  });
});

describe("TTL sweep", () => {
  it("deletes blobs older than the TTL and keeps younger ones", async () => {
    const old = await uploader.put(randomBytes(10));
    await new Promise((r) => setTimeout(r, 300));
    const young = await uploader.put(randomBytes(10));
    const swept = await sweepExpired(store, 150);
    expect(swept).toContain(old.name);
    expect(swept).not.toContain(young.name);
    expect(await stored(old.name)).toBe(false);
    expect(await stored(young.name)).toBe(true);
    uploader.remove([young.name]);
  });
});
