import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { AdapterStore, makeLoraAdapter } from "@shoal/adapters";
import { SMOLLM2_SHAPE, tempDir } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  adapterArchive,
  call,
  SMOLLM2_ID,
  SMOLLM2_KEY,
  startRegistry,
  upload,
  type TestRegistry,
} from "./support.js";

let registry: TestRegistry;

beforeAll(async () => {
  registry = await startRegistry();
});

afterAll(async () => {
  await registry.stop();
});

const ENCODED_ID = encodeURIComponent(SMOLLM2_ID);

describe("the adapter lifecycle", () => {
  it("uploads, lists, gets, versions, fetches and deletes an adapter", async () => {
    const first = await upload(registry, "support-bot", await adapterArchive({ seed: 1 }));
    expect(first.status).toBe(201);
    expect(first.body["model"]).toBe(`${SMOLLM2_ID}:support-bot@1`);
    expect(first.headers.get("location")).toBe(
      `/v1/adapters/${SMOLLM2_KEY}/support-bot/versions/1`,
    );
    expect(first.body["version"]).toMatchObject({
      version: 1,
      rank: 8,
      alpha: 16,
      rslora: false,
      targetModules: ["q_proj", "v_proj"],
      dtype: "F32",
      model: `${SMOLLM2_ID}:support-bot@1`,
    });
    expect(first.body["adapter"]).toMatchObject({
      base: SMOLLM2_ID,
      baseKey: SMOLLM2_KEY,
      name: "support-bot",
      owner: "acme",
    });

    // The second version comes as a gzipped folder, addressed by the base's URL-encoded id.
    const second = await call(registry, "PUT", `/v1/adapters/${ENCODED_ID}/support-bot`, {
      token: registry.keys.acme,
      body: await adapterArchive({ seed: 2, gzip: true, folder: true, dtype: "BF16", rank: 4 }),
    });
    expect(second.status).toBe(201);
    expect(second.body["model"]).toBe(`${SMOLLM2_ID}:support-bot@2`);
    expect(second.body["version"]).toMatchObject({ version: 2, rank: 4, dtype: "BF16" });

    const listed = await call(registry, "GET", "/v1/adapters", { token: registry.keys.acme });
    expect(listed.status).toBe(200);
    const adapters = listed.body["adapters"] as {
      name: string;
      model: string;
      versions: { version: number }[];
    }[];
    const mine = adapters.find((a) => a.name === "support-bot");
    expect(mine?.model).toBe(`${SMOLLM2_ID}:support-bot`);
    expect(mine?.versions.map((v) => v.version)).toEqual([1, 2]);
    for (const base of [SMOLLM2_KEY, ENCODED_ID]) {
      const filtered = await call(registry, "GET", `/v1/adapters?base=${base}`, {
        token: registry.keys.acme,
      });
      expect((filtered.body["adapters"] as { name: string }[]).map((a) => a.name)).toContain(
        "support-bot",
      );
    }
    const others = await call(registry, "GET", "/v1/adapters", { token: registry.keys.globex });
    expect((others.body["adapters"] as { name: string }[]).map((a) => a.name)).not.toContain(
      "support-bot",
    );

    const got = await call(registry, "GET", `/v1/adapters/${ENCODED_ID}/support-bot`, {
      token: registry.keys.acme,
    });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ name: "support-bot", lastVersion: 2 });
    const v2 = await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/support-bot/versions/2`, {
      token: registry.keys.acme,
    });
    expect(v2.body).toMatchObject({ version: 2, model: `${SMOLLM2_ID}:support-bot@2` });
    expect(
      (
        await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/support-bot/versions/3`, {
          token: registry.keys.acme,
        })
      ).status,
    ).toBe(404);

    // What a worker fetches is byte for byte what was uploaded.
    const store = await AdapterStore.open(registry.nc);
    const dir = join(await tempDir("fetched"), "support-bot@1");
    await store.fetch(SMOLLM2_KEY, "support-bot", 1, dir);
    const uploaded = makeLoraAdapter(SMOLLM2_SHAPE, { seed: 1 });
    const sha = (data: Buffer): string => createHash("sha256").update(data).digest("hex");
    expect(sha(await readFile(join(dir, "adapter_model.safetensors")))).toBe(sha(uploaded.weights));
    expect(sha(await readFile(join(dir, "adapter_config.json")))).toBe(sha(uploaded.config));
    expect(await registry.objects("support-bot")).toHaveLength(4);

    const dropped = await call(
      registry,
      "DELETE",
      `/v1/adapters/${SMOLLM2_KEY}/support-bot/versions/1`,
      { token: registry.keys.acme },
    );
    expect(dropped.status).toBe(200);
    expect(dropped.body).toEqual({ base: SMOLLM2_ID, name: "support-bot", removed: [1] });
    const after = await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/support-bot`, {
      token: registry.keys.acme,
    });
    expect((after.body["versions"] as { version: number }[]).map((v) => v.version)).toEqual([2]);
    expect(await registry.objects("support-bot")).toEqual([
      `${SMOLLM2_KEY}/support-bot/2/adapter_config.json`,
      `${SMOLLM2_KEY}/support-bot/2/adapter_model.safetensors`,
    ]);

    // A new version never takes a deleted one's number.
    expect(
      (await upload(registry, "support-bot", await adapterArchive({ seed: 3 }))).body["model"],
    ).toBe(`${SMOLLM2_ID}:support-bot@3`);

    const all = await call(registry, "DELETE", `/v1/adapters/${SMOLLM2_KEY}/support-bot`, {
      token: registry.keys.acme,
    });
    expect(all.body).toEqual({ base: SMOLLM2_ID, name: "support-bot", removed: [2, 3] });
    expect(
      (
        await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/support-bot`, {
          token: registry.keys.acme,
        })
      ).status,
    ).toBe(404);
    expect(await registry.objects("support-bot")).toEqual([]);
    const gone = await call(registry, "DELETE", `/v1/adapters/${SMOLLM2_KEY}/support-bot`, {
      token: registry.keys.acme,
    });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toEqual({
      code: "not_found",
      message: `no adapter support-bot for ${SMOLLM2_ID}`,
    });
  });

  it("gives two concurrent uploads of one name distinct versions", async () => {
    const archives = [await adapterArchive({ seed: 10 }), await adapterArchive({ seed: 11 })];
    // Both requests are on the wire before either is answered.
    const [a, b] = await Promise.all(archives.map((archive) => upload(registry, "twins", archive)));
    if (a === undefined || b === undefined) throw new Error("two answers expected");
    expect([a.status, b.status]).toEqual([201, 201]);
    expect([a.body["model"], b.body["model"]].sort()).toEqual([
      `${SMOLLM2_ID}:twins@1`,
      `${SMOLLM2_ID}:twins@2`,
    ]);
    const record = await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/twins`, {
      token: registry.keys.acme,
    });
    expect((record.body["versions"] as { version: number }[]).map((v) => v.version)).toEqual([
      1, 2,
    ]);
    expect(await registry.objects("twins")).toHaveLength(4);
  });
});

describe("tenants", () => {
  it("keeps an adapter to the tenant that first published it", async () => {
    expect((await upload(registry, "acme-only", await adapterArchive())).status).toBe(201);
    const path = `/v1/adapters/${SMOLLM2_KEY}/acme-only`;
    const theirs = await upload(
      registry,
      "acme-only",
      await adapterArchive({ seed: 5 }),
      registry.keys.globex,
    );
    // The name is taken; whose it is, the answer does not say.
    expect(theirs.status).toBe(409);
    expect(theirs.body.error).toEqual({
      code: "conflict",
      message: `the adapter name acme-only for ${SMOLLM2_ID} is taken; choose another`,
    });
    // To globex, acme's adapter does not exist: the same 404 as a name nobody holds.
    const missing = await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/nobody-has-this`, {
      token: registry.keys.globex,
    });
    for (const [method, p] of [
      ["DELETE", path],
      ["DELETE", `${path}/versions/1`],
      ["GET", path],
      ["GET", `${path}/versions/1`],
    ] as const) {
      const answer = await call(registry, method, p, { token: registry.keys.globex });
      expect(answer.status, `${method} ${p}`).toBe(404);
      expect(JSON.stringify(answer.body.error).replace("acme-only", "X")).toBe(
        JSON.stringify(missing.body.error).replace("nobody-has-this", "X"),
      );
    }
    expect(
      (await call(registry, "GET", path, { token: registry.keys.acme })).body["versions"],
    ).toHaveLength(1);
    expect(await registry.objects("acme-only")).toHaveLength(2);
  });

  it.each([
    ["no key", () => ({}), "send an API key as Authorization: Bearer <key>"],
    [
      "an unknown key",
      () => ({ authorization: `Bearer shoal_aaaaaaaa_${"A".repeat(43)}` }),
      "the API key is not valid",
    ],
    [
      "a tampered key",
      () => ({ authorization: `Bearer ${registry.keys.acme.slice(0, -2)}xx` }),
      "the API key is not valid",
    ],
    [
      "another scheme",
      () => ({ authorization: `Basic ${registry.keys.acme}` }),
      "send an API key as Authorization: Bearer <key>",
    ],
  ])("answers 401 to %s, on every route", async (_, headersOf, message) => {
    const headers = headersOf();
    for (const [method, path] of [
      ["GET", "/v1/adapters"],
      ["GET", `/v1/adapters/${SMOLLM2_KEY}/x`],
      ["DELETE", `/v1/adapters/${SMOLLM2_KEY}/x`],
      ["PUT", `/v1/adapters/${SMOLLM2_KEY}/x`],
    ] as const) {
      const answer = await call(registry, method, path, {
        headers,
        ...(method === "PUT" ? { body: await adapterArchive() } : {}),
      });
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="shoal"');
      expect(answer.body.error).toEqual({ code: "unauthenticated", message });
    }
  });

  it("never writes a key to its log, and audits refused ones by prefix", () => {
    expect(registry.logs()).toContain('"msg":"request"');
    for (const key of [registry.keys.acme, registry.keys.globex]) {
      expect(registry.logs()).not.toContain(key.slice(-43));
    }
    expect(registry.logs()).toMatch(
      /"audit":true,"action":"registry.request","outcome":"denied","key_prefix":"aaaaaaaa"/,
    );
  });
});

describe("sharing an adapter", () => {
  it("lets the owner share with named tenants or everyone, and nobody else", async () => {
    expect((await upload(registry, "shared-bot", await adapterArchive())).status).toBe(201);
    const path = `/v1/adapters/${SMOLLM2_KEY}/shared-bot/sharing`;
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));
    const shared = await call(registry, "PUT", path, {
      token: registry.keys.acme,
      body: json({ shared_with: ["globex", "globex"] }),
    });
    expect(shared.status).toBe(200);
    expect(shared.body["sharedWith"]).toEqual(["globex"]);
    const store = await AdapterStore.open(registry.nc);
    expect((await store.get(SMOLLM2_KEY, "shared-bot"))?.sharedWith).toEqual(["globex"]);

    // Sharing does not hand over the adapter: globex still cannot manage it.
    const byGlobex = await call(registry, "PUT", path, {
      token: registry.keys.globex,
      body: json({ shared_with: ["*"] }),
    });
    expect(byGlobex.status).toBe(404);
    for (const [body, status] of [
      [json({ shared_with: ["Not A Tenant"] }), 400],
      [json({ shared_with: "globex" }), 400],
      [json({}), 400],
      [Buffer.from("{nope"), 400],
      [Buffer.alloc(70 * 1024, 0x20), 413],
    ] as const) {
      expect((await call(registry, "PUT", path, { token: registry.keys.acme, body })).status).toBe(
        status,
      );
    }
    const privateAgain = await call(registry, "PUT", path, {
      token: registry.keys.acme,
      body: json({ shared_with: [] }),
    });
    expect(privateAgain.body["sharedWith"]).toEqual([]);
  });
});

describe("a single-tenant registry", () => {
  it("says so when it starts, and serves everyone as tenant default", async () => {
    const single = await startRegistry({ access: "open" });
    try {
      expect(single.logs()).toContain("single-tenant, every request acts as default");
      const answer = await upload(single, "shared", await adapterArchive(), "anything");
      expect(answer.status).toBe(201);
      expect(answer.body["adapter"]).toMatchObject({ owner: "default" });
      const listed = await call(single, "GET", "/v1/adapters", {});
      expect((listed.body["adapters"] as { name: string }[]).map((a) => a.name)).toEqual([
        "shared",
      ]);
    } finally {
      await single.stop();
    }
  });
});
