import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { BlobUploader, blobStoreFromEnv, openBlobStore, type BlobStore } from "@shoal/blobs";
import { InferenceService } from "@shoal/proto";
import {
  startS3Server,
  startService,
  type S3ServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine } from "./support/fixture.js";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

// Inputs over the offload threshold (1 MiB) go through the blob-offloader service, run as its
// own process, and the blob store; the work queue carries only a reference. Every test runs
// with each store: the JetStream Object Store, and an S3 bucket (s3s-fs) that the offloader
// and the worker reach with the AWS SDK's own environment variables for credentials.

let s3: S3ServerHandle;

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket("shoal-offload");
});

afterAll(async () => {
  await s3.stop();
});

const stores: [string, () => Record<string, string>][] = [
  ["the JetStream Object Store", () => ({})],
  [
    "an S3 bucket",
    () => ({
      SHOAL_BLOB_STORE: "s3",
      SHOAL_BLOB_S3_BUCKET: "shoal-offload",
      SHOAL_BLOB_S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    }),
  ],
];

// 5 MiB of one repeated word: MiniLM sees its first 254 words, exactly as it sees a text only
// a little longer than that, so the answer can be checked against one that never left the queue.
const WORD = "harbor ";
const huge = WORD.repeat(Math.ceil((5 * 1024 * 1024) / WORD.length));

async function eventually(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(stores)("blobs kept in %s", (_store, storeEnv) => {
  let cluster: TestCluster;
  let spy: NatsConnection;
  let work: Subscription;
  let store: BlobStore;
  let offloader: ServiceHandle | undefined;
  const workItemBytes: number[] = [];

  function startOffloader(env: Record<string, string> = {}): Promise<ServiceHandle> {
    return startService("blob-offloader", {
      env: { NATS_URL: cluster.nats.url, ...storeEnv(), ...env },
      readyMessage: "blob offloader serving",
    });
  }

  beforeAll(async () => {
    cluster = await startCluster({ env: storeEnv() });
    offloader = await startOffloader();
    spy = await connect({ servers: cluster.nats.url });
    // This process reads the store as the services do, with the credentials given explicitly.
    const settings = blobStoreFromEnv(storeEnv());
    store = await openBlobStore(
      spy,
      settings.backend === "s3" ? { ...settings, credentials: s3.credentials } : settings,
    );
    work = spy.subscribe("shoal.work.v1.>", {
      callback: (_err, msg) => {
        workItemBytes.push(msg.data.byteLength);
      },
    });
    await spy.flush();
  });

  afterAll(async () => {
    work.unsubscribe();
    store.close();
    await spy.close();
    await offloader?.stop();
    await cluster.stop();
  });

  async function liveBlobs(): Promise<string[]> {
    return (await store.list()).map((b) => b.name);
  }

  async function embed(input: string[]): Promise<Response> {
    return fetch(`${cluster.baseUrl}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MINILM, input }),
    });
  }

  describe("a 5 MiB input", () => {
    it("goes through the offloader: the work item stays small and the blob is gone after", async () => {
      expect(Buffer.byteLength(huge)).toBeGreaterThanOrEqual(5 * 1024 * 1024);
      workItemBytes.length = 0;
      const res = await embed([huge, "a small neighbour"]);
      expect(res.status, await res.clone().text()).toBe(200);
      const body = (await res.json()) as { data: { embedding: number[]; truncated: boolean }[] };
      expect(body.data.map((d) => d.truncated)).toEqual([true, false]);
      await spy.flush();
      expect(workItemBytes.length).toBeGreaterThanOrEqual(1);
      expect(Math.max(...workItemBytes)).toBeLessThan(4 * 1024);

      const reference = (await (await embed([WORD.repeat(400)])).json()) as typeof body;
      expect(
        cosine(body.data[0]?.embedding ?? [], reference.data[0]?.embedding ?? []),
      ).toBeGreaterThanOrEqual(0.9999);

      await eventually(async () => (await liveBlobs()).length === 0);
    });

    it("is deleted after a failed answer too", async () => {
      workItemBytes.length = 0;
      const res = await fetch(`${cluster.baseUrl}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MINILM, input: [huge], truncate: false }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/token/);
      // It went through the offloader and the queue, and failed there, not before.
      await spy.flush();
      expect(workItemBytes.length).toBeGreaterThanOrEqual(1);
      await eventually(async () => (await liveBlobs()).length === 0);
    });

    it("keeps each reference with its part when a request is cut into several", async () => {
      // 64 inputs fill a part (SHOAL_PART_MAX_INPUTS), so the huge one, at index 66, is input 2
      // of the second part.
      const inputs = Array.from({ length: 70 }, (_, i) => `small input ${i}`);
      inputs[66] = huge;
      workItemBytes.length = 0;
      const res = await embed(inputs);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { embedding: number[]; truncated: boolean }[] };
      await spy.flush();
      expect(workItemBytes).toHaveLength(2);
      expect(Math.max(...workItemBytes)).toBeLessThan(4 * 1024);
      expect(body.data.map((d) => d.truncated).filter(Boolean)).toHaveLength(1);
      expect(body.data[66]?.truncated).toBe(true);
      const reference = (await (
        await embed([WORD.repeat(400), "small input 65"])
      ).json()) as typeof body;
      expect(
        cosine(body.data[66]?.embedding ?? [], reference.data[0]?.embedding ?? []),
      ).toBeGreaterThanOrEqual(0.9999);
      expect(
        cosine(body.data[65]?.embedding ?? [], reference.data[1]?.embedding ?? []),
      ).toBeGreaterThanOrEqual(0.9999);
      await eventually(async () => (await liveBlobs()).length === 0);
    });
  });

  describe("over gRPC", () => {
    it("offloads a large input of Embed the same way", async () => {
      const client = createClient(
        InferenceService,
        createGrpcTransport({ baseUrl: cluster.baseUrl }),
      );
      workItemBytes.length = 0;
      const res = await client.embed({ model: MINILM, inputs: [huge] });
      expect(res.embeddings[0]?.truncated).toBe(true);
      expect(res.embeddings[0]?.values).toHaveLength(384);
      await spy.flush();
      expect(workItemBytes.length).toBeGreaterThanOrEqual(1);
      expect(Math.max(...workItemBytes)).toBeLessThan(4 * 1024);
      await eventually(async () => (await liveBlobs()).length === 0);
    });
  });

  describe("with the offloader down", () => {
    it("answers 503 at once and queues nothing, then works again once it is back", async () => {
      await offloader?.stop();
      offloader = undefined;
      workItemBytes.length = 0;
      const res = await embed([huge]);
      expect(res.status).toBe(503);
      const error = ((await res.json()) as { error: { message: string; type: string } }).error;
      expect(error.type).toBe("service_unavailable_error");
      expect(error.message).toMatch(/blob offloader is unavailable/);
      await spy.flush();
      expect(workItemBytes).toEqual([]);
      // Small requests never needed it.
      expect((await embed(["still served"])).status).toBe(200);

      offloader = await startOffloader();
      expect((await embed([huge])).status).toBe(200);
      await eventually(async () => (await liveBlobs()).length === 0);
    });
  });

  describe("the TTL sweep", () => {
    it("deletes an orphaned blob (its ingress died before the answer) once it outlives the TTL", async () => {
      await offloader?.stop();
      offloader = await startOffloader({ SHOAL_BLOB_TTL_MS: "2000", SHOAL_BLOB_SWEEP_MS: "200" });
      // Stored as ingress stores it, but never removed by anyone.
      const orphan = await new BlobUploader({ nc: spy }).put(new TextEncoder().encode(huge));
      expect(await liveBlobs()).toContain(orphan.name);
      const stored = Date.now();
      await eventually(async () => !(await liveBlobs()).includes(orphan.name));
      expect(Date.now() - stored).toBeGreaterThanOrEqual(1000);
    });
  });
});
