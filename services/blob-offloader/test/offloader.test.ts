import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  BlobRefusedError,
  BlobUploader,
  ensureBlobStore,
  fetchBlob,
  type BlobStore,
  type BlobStoreSettings,
} from "@shoal/blobs";
import {
  createLogger,
  createMetricsRegistry,
  serveMetrics,
  type MetricsServer,
} from "@shoal/telemetry";
import {
  scrapeMetrics,
  startNatsServer,
  startS3Server,
  type NatsServerHandle,
  type S3ServerHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningBlobOffloader } from "../src/run.js";

let nats: NatsServerHandle;
let s3: S3ServerHandle;
let nc: NatsConnection;
let uploader: BlobUploader;
const logger = createLogger({ service: "blob-offloader", level: "silent" });

beforeAll(async () => {
  [nats, s3] = await Promise.all([startNatsServer(), startS3Server()]);
  await s3.createBucket("offloaded");
  nc = await connect({ servers: nats.url });
  uploader = new BlobUploader({ nc });
});

afterAll(async () => {
  await nc.close();
  await Promise.all([nats.stop(), s3.stop()]);
});

const s3Settings = (bucket: string): Extract<BlobStoreSettings, { backend: "s3" }> => ({
  backend: "s3",
  bucket,
  endpoint: s3.endpoint,
  credentials: s3.credentials,
});

async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each([
  ["the JetStream Object Store", (): BlobStoreSettings => ({ backend: "nats" })],
  ["an S3 bucket", () => s3Settings("offloaded")],
])("the blob offloader service, keeping blobs in %s", (_name, settings) => {
  let offloader: RunningBlobOffloader;
  let store: BlobStore;
  let metrics: MetricsServer;

  beforeAll(async () => {
    const registry = createMetricsRegistry();
    metrics = await serveMetrics({ registry, port: 0, logger });
    offloader = await run({
      natsServers: nats.url,
      store: settings(),
      // Above a second: S3 stores modification times in whole seconds.
      ttlMs: 1_500,
      sweepIntervalMs: 100,
      maxBlobBytes: 4 * 1024 * 1024,
      metrics: registry,
      logger,
    });
    store = await ensureBlobStore(nc, settings());
  });

  afterAll(async () => {
    await offloader.stop();
    await metrics.close();
    store.close();
  });

  async function stored(name: string): Promise<boolean> {
    return (await store.list()).some((b) => b.name === name);
  }

  it("stores an upload, serves it, and deletes it when asked", async () => {
    const bytes = randomBytes(3 * 1024 * 1024);
    const info = await uploader.put(bytes);
    expect(Buffer.from(await fetchBlob(store, info)).equals(bytes)).toBe(true);
    uploader.remove([info.name]);
    await eventually(async () => !(await stored(info.name)));
    // Counted: the upload and its bytes, and the delete once it is done.
    await eventually(async () => {
      const samples = await scrapeMetrics(metrics.port);
      return samples.get('shoal_offloader_deletes_total{outcome="ok"}') === 1;
    });
    const samples = await scrapeMetrics(metrics.port);
    expect(samples.get('shoal_offloader_uploads_total{outcome="stored"}')).toBe(1);
    expect(samples.get("shoal_offloader_stored_bytes_total")).toBe(3 * 1024 * 1024);
    expect(samples.get("shoal_offloader_uploads_in_progress")).toBe(0);
  });

  it("refuses a blob over its limit at the opening, and counts why", async () => {
    await expect(uploader.put(randomBytes(4 * 1024 * 1024 + 1))).rejects.toBeInstanceOf(
      BlobRefusedError,
    );
    const samples = await scrapeMetrics(metrics.port);
    expect(samples.get('shoal_offloader_refused_uploads_total{reason="too_large"}')).toBe(1);
  });

  it("sweeps a blob nobody removes once it is older than the TTL", async () => {
    const info = await uploader.put(randomBytes(1000));
    const storedAt = Date.now();
    expect(await stored(info.name)).toBe(true);
    await eventually(async () => !(await stored(info.name)));
    expect(Date.now() - storedAt).toBeGreaterThanOrEqual(500);
    const samples = await scrapeMetrics(metrics.port);
    expect(samples.get("shoal_offloader_swept_blobs_total")).toBe(1);
    expect(samples.get('shoal_offloader_sweeps_total{outcome="ok"}')).toBeGreaterThan(1);
  });
});

describe("an S3 bucket the offloader cannot use", () => {
  it("stops the start with the bucket named and why", async () => {
    await expect(
      run({ natsServers: nats.url, store: s3Settings("no-such-bucket"), logger }),
    ).rejects.toThrow(/S3 bucket no-such-bucket is not usable: no such bucket/);
    await expect(
      run({
        natsServers: nats.url,
        store: {
          ...s3Settings("offloaded"),
          credentials: { ...s3.credentials, secretAccessKey: "x" },
        },
        logger,
      }),
    ).rejects.toThrow(/access denied/);
  });
});

describe("an S3 store that goes away while the offloader runs", () => {
  it("refuses uploads with a message that names no host, and keeps serving", async () => {
    const doomed = await startS3Server();
    await doomed.createBucket("short-lived");
    const offloader = await run({
      natsServers: nats.url,
      offloaderId: "doomed",
      store: {
        backend: "s3",
        bucket: "short-lived",
        endpoint: doomed.endpoint,
        credentials: doomed.credentials,
      },
      sweepIntervalMs: 100,
      logger,
    });
    try {
      await doomed.stop();
      const uploads = new BlobUploader({ nc, timeoutMs: 10_000 });
      for (const size of [10, 3 * 1024 * 1024]) {
        const err = await uploads.put(randomBytes(size)).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BlobRefusedError);
        expect((err as Error).message).toBe(
          "the blob store could not take the upload; retry shortly",
        );
      }
    } finally {
      await offloader.stop();
    }
  });
});
