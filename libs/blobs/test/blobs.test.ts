import { createHash, randomBytes } from "node:crypto";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import {
  startNatsServer,
  startS3Server,
  type NatsServerHandle,
  type S3ServerHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BlobHeaders,
  BlobMissingError,
  BlobRefusedError,
  BlobStoreUnavailableError,
  BlobSubjects,
  BlobUploader,
  CHUNK_BYTES,
  ensureBlobStore,
  fetchBlob,
  serveBlobs,
  sweepExpired,
  type BlobServer,
  type BlobStore,
  type BlobStoreSettings,
} from "../src/index.js";

// Every test runs against both backends: the JetStream Object Store and an S3-compatible
// server (s3s-fs), behind the same offloader protocol.

let nats: NatsServerHandle;
let s3: S3ServerHandle;
let nc: NatsConnection;
const logger = createLogger({ service: "blob-test", level: "silent" });

beforeAll(async () => {
  [nats, s3] = await Promise.all([startNatsServer(), startS3Server()]);
  await s3.createBucket("shoal-blobs-test");
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await nc.close();
  await Promise.all([nats.stop(), s3.stop()]);
});

const backends: [string, () => BlobStoreSettings][] = [
  ["JetStream Object Store", () => ({ backend: "nats" })],
  [
    "S3",
    () => ({
      backend: "s3",
      bucket: "shoal-blobs-test",
      endpoint: s3.endpoint,
      credentials: s3.credentials,
    }),
  ],
];

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(backends)("blobs in the %s", (_backend, settings) => {
  let store: BlobStore;
  let server: BlobServer;
  let uploader: BlobUploader;

  beforeAll(async () => {
    store = await ensureBlobStore(nc, settings(), { logger });
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
    store.close();
  });

  /** Whether a blob is in the store. */
  async function stored(name: string): Promise<boolean> {
    return (await store.list()).some((b) => b.name === name);
  }

  /** Blobs in the store now. */
  async function live(): Promise<number> {
    return (await store.list()).length;
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
      await expect(fetchBlob(store, { ...info, size: 99 })).rejects.toBeInstanceOf(
        BlobMissingError,
      );
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
      const reply = await nc.request(subject, new Uint8Array(10), {
        headers: last,
        timeout: 5_000,
      });
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
      expect(reply.headers?.get(BlobHeaders.error)).toMatch(/sent nothing for 500 ms/);
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

  it("keeps nothing of a put whose body breaks off", async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(CHUNK_BYTES));
        controller.error(new Error("sender went away"));
      },
    });
    await expect(store.put("broken", 2 * CHUNK_BYTES, body)).rejects.toThrow();
    expect(await stored("broken")).toBe(false);
  });
});
