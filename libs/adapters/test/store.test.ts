import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { SMOLLM2_SHAPE, startNatsServer, tempDir, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADAPTER_BUCKET,
  ADAPTER_INDEX_BUCKET,
  AdapterIntegrityError,
  AdapterNotFoundError,
  AdapterOwnershipError,
  adapterObjectName,
  adapterObjectPrefix,
  AdapterStore,
  makeLoraAdapter,
  validateLoraAdapter,
  type AdapterIndexChange,
  type AdapterWatch,
  type BaseShape,
} from "../src/index.js";

const SMOLLM2: BaseShape = SMOLLM2_SHAPE;
const BASE = { id: "HuggingFaceTB/SmolLM2-135M-Instruct", key: "smollm2-135m-instruct" };

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: AdapterStore;
let objects: ObjectStore;
let dir: string;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await AdapterStore.open(nc);
  objects = await new Objm(nc).open(ADAPTER_BUCKET);
  dir = await tempDir("adapter-store");
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

/** A small valid adapter (rank 2 on q_proj of two layers): each seed gives other bytes. */
function adapter(seed: number) {
  const files = makeLoraAdapter(SMOLLM2, {
    seed,
    rank: 2,
    targetModules: ["q_proj"],
    layers: [0, 1],
  });
  return { files, summary: validateLoraAdapter(files, SMOLLM2) };
}

function publish(name: string, seed: number, owner = "acme") {
  return store.publish({ base: BASE, name, owner, ...adapter(seed) });
}

/** Live objects of one adapter, by name. */
async function storedObjects(name: string): Promise<string[]> {
  const prefix = adapterObjectPrefix(BASE.key, name);
  return (await objects.list())
    .filter((info) => !info.deleted && info.name.startsWith(prefix))
    .map((info) => info.name)
    .sort();
}

const sha256 = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

describe("AdapterStore", () => {
  it("publishes versions from 1, lists, gets and resolves them", async () => {
    const first = await publish("support-bot", 1);
    expect(first.model).toBe("HuggingFaceTB/SmolLM2-135M-Instruct:support-bot@1");
    expect(first.version).toMatchObject({
      version: 1,
      rank: 2,
      targetModules: ["q_proj"],
      layers: [0, 1],
    });
    expect(first.version.files.weights).toEqual({
      sha256: sha256(adapter(1).files.weights),
      bytes: adapter(1).files.weights.length,
    });
    const second = await publish("support-bot", 2);
    expect(second.version.version).toBe(2);
    expect(second.record).toMatchObject({
      base: BASE.id,
      baseKey: BASE.key,
      name: "support-bot",
      owner: "acme",
      lastVersion: 2,
    });
    expect(second.record.versions.map((v) => v.version)).toEqual([1, 2]);

    expect((await store.get(BASE.key, "support-bot"))?.versions).toHaveLength(2);
    expect((await store.resolve(BASE.key, "support-bot")).version).toBe(2);
    expect((await store.resolve(BASE.key, "support-bot", 1)).files.config.sha256).toBe(
      sha256(adapter(1).files.config),
    );
    expect((await store.list()).map((r) => r.name)).toContain("support-bot");
    expect(await store.list("all-minilm-l6-v2")).toEqual([]);
    expect(await storedObjects("support-bot")).toEqual([
      adapterObjectName(BASE.key, "support-bot", 1, "config"),
      adapterObjectName(BASE.key, "support-bot", 1, "weights"),
      adapterObjectName(BASE.key, "support-bot", 2, "config"),
      adapterObjectName(BASE.key, "support-bot", 2, "weights"),
    ]);
    expect(adapterObjectName(BASE.key, "support-bot", 2, "weights")).toBe(
      "smollm2-135m-instruct/support-bot/2/adapter_model.safetensors",
    );
  });

  it("says what is missing when a name or version does not resolve", async () => {
    await expect(store.resolve(BASE.key, "nobody")).rejects.toThrow(
      new AdapterNotFoundError("no adapter nobody for smollm2-135m-instruct"),
    );
    await publish("resolver", 1);
    await expect(store.resolve(BASE.key, "resolver", 7)).rejects.toThrow(
      "adapter resolver for smollm2-135m-instruct has no version 7",
    );
    expect(await store.get(BASE.key, "nobody")).toBeUndefined();
  });

  it("gives concurrent publishes of one name distinct versions, each with its own files", async () => {
    const results = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((seed) => publish("busy", 100 + seed)),
    );
    expect(results.map((r) => r.version.version).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    const record = await store.get(BASE.key, "busy");
    expect(record?.versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5, 6]);
    // Each version holds the bytes of the upload that got its number.
    for (const result of results) {
      const target = join(dir, `busy-${result.version.version}`);
      await store.fetch(BASE.key, "busy", result.version.version, target);
      const weights = await readFile(join(target, "adapter_model.safetensors"));
      expect(sha256(weights)).toBe(result.version.files.weights.sha256);
    }
    expect(new Set(results.map((r) => r.version.files.weights.sha256)).size).toBe(6);
  });

  it("lets only the owner publish to or remove an adapter, and leaves nothing of a refused upload", async () => {
    await publish("owned", 1, "acme");
    const before = await storedObjects("owned");
    await expect(publish("owned", 2, "globex")).rejects.toThrow(AdapterOwnershipError);
    expect(await storedObjects("owned")).toEqual(before);
    await expect(store.remove(BASE.key, "owned", { owner: "globex" })).rejects.toThrow(
      "adapter owned for smollm2-135m-instruct belongs to another tenant",
    );
    expect((await store.get(BASE.key, "owned"))?.versions).toHaveLength(1);
  });

  it("removes a version and its files, never reuses its number, and removes the rest", async () => {
    await publish("pruned", 1);
    await publish("pruned", 2);
    expect(
      (await store.remove(BASE.key, "pruned", { version: 2, owner: "acme" })).map((v) => v.version),
    ).toEqual([2]);
    await expect(store.resolve(BASE.key, "pruned", 2)).rejects.toThrow(AdapterNotFoundError);
    expect((await store.resolve(BASE.key, "pruned")).version).toBe(1);
    expect((await publish("pruned", 3)).version.version).toBe(3);
    await expect(store.remove(BASE.key, "pruned", { version: 2 })).rejects.toThrow(
      "has no version 2",
    );

    expect((await store.remove(BASE.key, "pruned")).map((v) => v.version)).toEqual([1, 3]);
    expect(await store.get(BASE.key, "pruned")).toBeUndefined();
    expect(await storedObjects("pruned")).toEqual([]);
    await expect(store.remove(BASE.key, "pruned")).rejects.toThrow("no adapter pruned");
    // The name is free again, for anyone, and its numbers go on: pruned@1 never means two things.
    const again = await publish("pruned", 4, "globex");
    expect(again.version.version).toBe(4);
    expect(again.record).toMatchObject({ owner: "globex", lastVersion: 4 });
    expect(again.record.versions.map((v) => v.version)).toEqual([4]);
    expect(again.record).not.toHaveProperty("deleted");
  });

  it("removing the last version removes the adapter, keeping its numbers used", async () => {
    await publish("single", 1);
    await store.remove(BASE.key, "single", { version: 1 });
    expect(await store.get(BASE.key, "single")).toBeUndefined();
    expect((await store.list()).map((r) => r.name)).not.toContain("single");
    await expect(store.resolve(BASE.key, "single")).rejects.toThrow(AdapterNotFoundError);
    await expect(store.remove(BASE.key, "single")).rejects.toThrow(AdapterNotFoundError);
    expect(await storedObjects("single")).toEqual([]);
    expect((await publish("single", 2)).version.version).toBe(2);
  });

  it("fetches a version into a directory atomically, and keeps one that already holds it", async () => {
    const { version } = await publish("fetched", 5);
    const target = join(dir, "cache", "smollm2", "fetched@1");
    expect(await store.fetch(BASE.key, "fetched", 1, target)).toBe(target);
    expect((await readdir(target)).sort()).toEqual([
      "adapter_config.json",
      "adapter_model.safetensors",
    ]);
    expect(sha256(await readFile(join(target, "adapter_config.json")))).toBe(
      version.files.config.sha256,
    );
    // No staging directory is left beside it.
    expect(await readdir(join(dir, "cache", "smollm2"))).toEqual(["fetched@1"]);
    expect(await store.fetch(BASE.key, "fetched", 1, target)).toBe(target);

    const other = join(dir, "occupied");
    await mkdir(other);
    await writeFile(join(other, "adapter_config.json"), "{}");
    await expect(store.fetch(BASE.key, "fetched", 1, other)).rejects.toThrow(AdapterIntegrityError);
    await expect(store.fetch(BASE.key, "fetched", 2, join(dir, "v2"))).rejects.toThrow(
      AdapterNotFoundError,
    );
  });

  it("refuses to fetch files that differ from their digests, writing nothing", async () => {
    await publish("tampered", 6);
    await objects.putBlob(
      { name: adapterObjectName(BASE.key, "tampered", 1, "weights") },
      adapter(7).files.weights,
    );
    const target = join(dir, "tampered");
    await expect(store.fetch(BASE.key, "tampered", 1, target)).rejects.toThrow(
      "stored object smollm2-135m-instruct/tampered/1/adapter_model.safetensors differs from its recorded digest",
    );
    expect((await readdir(dir)).filter((entry) => entry.includes("tampered"))).toEqual([]);
  });

  it("watches every record, then changes, hiding reservations", async () => {
    const watch: AdapterWatch = await store.watch();
    const seen: AdapterIndexChange[] = [];
    const reading = (async () => {
      let published = false;
      for await (const change of watch) {
        seen.push(change);
        if (change.name !== "watched") continue;
        if (change.kind === "put") published = true;
        else if (published) return;
      }
    })();
    await publish("watched", 1);
    await store.remove(BASE.key, "watched");
    await reading;
    watch.stop();
    const mine = seen.filter((c) => c.name === "watched");
    // The reservation shows as a delete, the published version as a put, the removal as a delete.
    expect(mine.map((c) => c.kind)).toEqual(["delete", "put", "delete"]);
    expect(mine[1]?.kind === "put" ? mine[1].record.versions.map((v) => v.version) : []).toEqual([
      1,
    ]);
    // Records that existed before the watch came first.
    expect(seen[0]?.kind).toBe("put");
  });

  it("sweeps what an interrupted upload left, and nothing else", async () => {
    await publish("swept", 1);
    const kv = await new Kvm(nc).open(ADAPTER_INDEX_BUCKET);
    // A process killed after storing version 2's files, and two killed after reserving a
    // number: the first ever of a new name, and the sixth of a name deleted after five.
    const orphan = adapterObjectName(BASE.key, "swept", 2, "weights");
    await objects.putBlob({ name: orphan }, new Uint8Array(10));
    const reservation = (name: string, lastVersion: number) =>
      kv.put(
        `${BASE.key}.${name}`,
        JSON.stringify({
          base: BASE.id,
          baseKey: BASE.key,
          name,
          owner: "acme",
          versions: [],
          lastVersion,
          createdAt: new Date(Date.now() - 7_200_000).toISOString(),
        }),
      );
    await reservation("abandoned", 1);
    await reservation("abandoned-again", 6);
    // Young leftovers may be uploads in progress.
    expect(await store.sweep()).toEqual({ objects: 0, reservations: 2 });
    expect((await publish("abandoned-again", 1, "globex")).version.version).toBe(7);
    expect(await storedObjects("swept")).toContain(orphan);
    expect(await store.sweep(60_000, Date.now() + 120_000)).toEqual({
      objects: 1,
      reservations: 0,
    });
    expect(await storedObjects("swept")).toEqual([
      adapterObjectName(BASE.key, "swept", 1, "config"),
      adapterObjectName(BASE.key, "swept", 1, "weights"),
    ]);
    expect(await kv.get(`${BASE.key}.abandoned`)).toMatchObject({ operation: "DEL" });
  });
});

describe("AdapterStore when the object store is full", () => {
  let small: NatsServerHandle;
  let smallNc: NatsConnection;

  beforeAll(async () => {
    small = await startNatsServer();
    smallNc = await connect({ servers: small.url });
  });

  afterAll(async () => {
    await smallNc.close();
    await small.stop();
  });

  it("refuses the upload and leaves no objects and no reservation behind", async () => {
    const full = await AdapterStore.open(smallNc, { maxBytes: 256 * 1024 });
    const files = makeLoraAdapter(SMOLLM2, { rank: 4 });
    await expect(
      full.publish({
        base: BASE,
        name: "too-big",
        owner: "acme",
        files,
        summary: validateLoraAdapter(files, SMOLLM2),
      }),
    ).rejects.toThrow();
    const bucket = await new Objm(smallNc).open(ADAPTER_BUCKET);
    expect((await bucket.list()).filter((info) => !info.deleted)).toEqual([]);
    const kv = await new Kvm(smallNc).open(ADAPTER_INDEX_BUCKET);
    expect(await kv.get(`${BASE.key}.too-big`)).toMatchObject({ operation: "DEL" });
  });
});
