import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { AdapterStore, readBaseShape, validateLoraAdapter } from "@shoal/adapters";
import { compileCatalog } from "@shoal/config";
import {
  AuthenticationError as ClientAuthenticationError,
  PermissionDeniedError as ClientPermissionDeniedError,
  ShoalClient,
} from "@shoal/client";
import { createLogger } from "@shoal/telemetry";
import { TenantStore } from "@shoal/tenants";
import {
  repoRoot,
  simEmbeddingEntry,
  smollm2CatalogDocument,
  smollm2Dir,
  TINY,
  tinyHeadsCatalogDocument,
} from "@shoal/testing";
import OpenAI, {
  AuthenticationError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningIngress } from "../src/run.js";
import {
  SMOLLM2,
  startGenerationCluster,
  type GenerationCluster,
} from "./support/generation-cluster.js";
import { collectStream, grpcError, inferenceStub, type InferenceStub } from "./support/grpc-js.js";
import { runPytest } from "./support/pytest.js";

// Ingress with SHOAL_AUTH=keys against a real cluster: tenants and keys in the SHOAL_TENANTS
// bucket, the official `openai` SDK, @grpc/grpc-js and (in pytest) the Python `openai` SDK and
// grpcio. acme may call everything but the NER model; beta owns a private adapter.

const EMB = "shoal/sim-embedding";
const SMOL_KEY = "smollm2-135m-instruct";
const ADAPTER_DIR = join(repoRoot(), "tools", "reference", "fixtures", "smollm2-lora");

const catalogDocument = {
  models: [
    ...smollm2CatalogDocument().models,
    simEmbeddingEntry(EMB, "sim-embedding"),
    ...tinyHeadsCatalogDocument().models,
  ],
};

let cluster: GenerationCluster;
let nc: NatsConnection;
let tenants: TenantStore;
let adapters: AdapterStore;
let acmeKey: string;
let betaKey: string;
const audit: Record<string, unknown>[] = [];

const openai = (key: string, baseUrl = cluster.baseUrl) =>
  new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: key, maxRetries: 0 });

async function publish(owner: string, name: string) {
  const files = {
    config: await readFile(join(ADAPTER_DIR, "adapter_config.json")),
    weights: await readFile(join(ADAPTER_DIR, "adapter_model.safetensors")),
  };
  const summary = validateLoraAdapter(files, await readBaseShape(smollm2Dir(), "gguf"));
  return adapters.publish({ base: { id: SMOLLM2, key: SMOL_KEY }, name, owner, files, summary });
}

beforeAll(async () => {
  cluster = await startGenerationCluster({
    catalog: catalogDocument,
    ingress: {
      access: "keys",
      logger: createLogger({
        service: "ingress",
        // Audit lines of admin actions done are information; of denials, warnings.
        level: "info",
        destination: {
          write(line: string) {
            const parsed = JSON.parse(line) as Record<string, unknown>;
            if (parsed["audit"] === true) audit.push(parsed);
          },
        },
      }),
    },
  });
  nc = await connect({ servers: cluster.nats.url });
  tenants = await TenantStore.open(nc, createLogger({ service: "test", level: "warn" }));
  await tenants.createTenant("acme", {
    models: [SMOLLM2, EMB, TINY.crossEncoder, TINY.classifier],
    admin: [],
  });
  await tenants.createTenant("beta", { models: ["*"], admin: [] });
  acmeKey = (await tenants.createKey("acme", "tests")).key;
  betaKey = (await tenants.createKey("beta", "tests")).key;
  adapters = await AdapterStore.open(nc);
  await publish("acme", "acme-poet");
  await publish("beta", "beta-secret");
  // Both adapters are in this ingress's copy of the index once beta's own listing shows its.
  const until = Date.now() + 10_000;
  for (;;) {
    const listed = (await openai(betaKey).models.list()).data.map((m) => m.id);
    if (listed.includes(`${SMOLLM2}:beta-secret`)) break;
    if (Date.now() > until)
      throw new Error(`ingress never listed beta's adapter: ${listed.join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 360_000);

afterAll(async () => {
  tenants.stop();
  await nc.close();
  await cluster.stop();
});

describe("the openai SDK with an API key", { timeout: 120_000 }, () => {
  it("works on every route the key's grants cover", async () => {
    const client = openai(acmeKey);
    const embedded = await client.embeddings.create({ model: EMB, input: ["a", "b"] });
    expect(embedded.data).toHaveLength(2);
    const chat = await client.chat.completions.create({
      model: SMOLLM2,
      messages: [{ role: "user", content: "Say hi." }],
      max_tokens: 4,
    });
    expect(chat.choices[0]?.message.content).toBeTruthy();
    const completion = await client.completions.create({
      model: `${SMOLLM2}:acme-poet`,
      prompt: "The sea",
      max_tokens: 4,
    });
    expect(completion.choices[0]?.text).toBeTruthy();
    const reranked = await client.post<{ results: unknown[] }>("/rerank", {
      body: { model: TINY.crossEncoder, query: "q", documents: ["x", "y"] },
    });
    expect(reranked.results).toHaveLength(2);
    const labelled = await client.post<{ data: unknown[] }>("/extract", {
      body: { model: TINY.classifier, input: ["some text"] },
    });
    expect(labelled.data).toHaveLength(1);
  });

  it("lists only the granted models and the adapters the tenant may see", async () => {
    const ids = (await openai(acmeKey).models.list()).data.map((m) => m.id);
    expect(ids).toEqual(
      expect.arrayContaining([SMOLLM2, EMB, TINY.crossEncoder, `${SMOLLM2}:acme-poet`]),
    );
    expect(ids).not.toContain(TINY.ner);
    expect(ids).not.toContain(`${SMOLLM2}:beta-secret`);
  });

  it("answers 401 without a key, with a wrong one and with a malformed one", async () => {
    // The SDK will not send a request without a key: a plain client does.
    const bare = await fetch(`${cluster.baseUrl}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: EMB, input: "x" }),
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await bare.json()).toMatchObject({
      error: { type: "authentication_error", code: "unauthenticated" },
    });
    const tampered = acmeKey.slice(0, -4) + (acmeKey.endsWith("AAAA") ? "BBBB" : "AAAA");
    for (const key of ["not-a-key", tampered, acmeKey.slice(0, 20), `${acmeKey}x`]) {
      const err = await openai(key)
        .embeddings.create({ model: EMB, input: "x" })
        .catch((e: unknown) => e);
      expect(err, key).toBeInstanceOf(AuthenticationError);
      expect((err as AuthenticationError).headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    const listing = await openai("sk-wrong")
      .models.list()
      .catch((e: unknown) => e);
    expect(listing).toBeInstanceOf(AuthenticationError);
  });

  it("answers 403 for a model outside the grants, and audits it with the key's prefix", async () => {
    const err = await openai(acmeKey)
      .post("/extract", { body: { model: TINY.ner, input: ["x"] } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect((err as PermissionDeniedError).message).toMatch(/no grant for model "shoal\/tiny-ner"/);
    const line = audit.find((a) => a["reason"] === "no grant for the model");
    expect(line).toMatchObject({ tenant: "acme", key_prefix: acmeKey.split("_")[1] });
    expect(JSON.stringify(audit)).not.toContain(acmeKey);
  });

  it("answers another tenant's private adapter exactly as one that does not exist", async () => {
    const chat = (model: string) =>
      openai(acmeKey)
        .chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] })
        .then(
          () => new Error(`${model} answered`),
          (e: unknown) => e as Error,
        );
    const hidden = await chat(`${SMOLLM2}:beta-secret`);
    const missing = await chat(`${SMOLLM2}:no-such-adapter`);
    expect(hidden).toBeInstanceOf(NotFoundError);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(hidden.message.replace("beta-secret", "X")).toBe(
      missing.message.replace("no-such-adapter", "X"),
    );
  });

  it("lets acme run beta's adapter once beta shares it", async () => {
    await adapters.share(SMOL_KEY, "beta-secret", "beta", ["acme"]);
    await expect
      .poll(async () => (await openai(acmeKey).models.list()).data.map((m) => m.id), {
        timeout: 10_000,
      })
      .toContain(`${SMOLLM2}:beta-secret`);
    const answer = await openai(acmeKey).completions.create({
      model: `${SMOLLM2}:beta-secret`,
      prompt: "The sea",
      max_tokens: 4,
    });
    expect(answer.choices[0]?.text).toBeTruthy();
    await adapters.share(SMOL_KEY, "beta-secret", "beta", []);
  });
});

describe("the MessagePack client (@shoal/client) with an API key", { timeout: 60_000 }, () => {
  it("embeds with the key, and gets typed errors without it or outside the grants", async () => {
    const client = (apiKey?: string) =>
      new ShoalClient({ baseUrl: cluster.baseUrl, maxRetries: 0, ...(apiKey ? { apiKey } : {}) });
    const embedded = await client(acmeKey).embed({ model: EMB, input: ["a", "b"] });
    expect(embedded.embeddings).toHaveLength(2);
    await expect(client().embed({ model: EMB, input: "a" })).rejects.toBeInstanceOf(
      ClientAuthenticationError,
    );
    await expect(client(acmeKey).embed({ model: TINY.ner, input: "a" })).rejects.toBeInstanceOf(
      ClientPermissionDeniedError,
    );
  });
});

describe("@grpc/grpc-js with the key in metadata", { timeout: 120_000 }, () => {
  let stub: InferenceStub;
  beforeAll(() => {
    stub = inferenceStub(cluster.baseUrl);
  });
  afterAll(() => {
    stub.close();
  });

  const call = <T>(method: "Embed" | "Score" | "ListModels", req: object, key?: string) =>
    new Promise<T>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      if (key !== undefined) metadata.set("authorization", `Bearer ${key}`);
      stub[method].call(stub, req, metadata, {}, (err, res) => {
        if (err !== null || res === undefined) reject(err ?? new Error("empty response"));
        else resolve(res as T);
      });
    });

  it("embeds and scores with a valid key", async () => {
    const embedded = await call<{ embeddings: unknown[] }>(
      "Embed",
      { model: EMB, inputs: ["a"] },
      acmeKey,
    );
    expect(embedded.embeddings).toHaveLength(1);
    const scored = await call<{ scores: number[] }>(
      "Score",
      { model: TINY.crossEncoder, query: "q", documents: ["d"] },
      acmeKey,
    );
    expect(scored.scores).toHaveLength(1);
  });

  it("is UNAUTHENTICATED without a key, on the fast Embed path and through Connect", async () => {
    expect((await grpcError(call("Embed", { model: EMB, inputs: ["a"] }))).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    expect((await grpcError(call("ListModels", {}))).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await grpcError(call("Embed", { model: EMB, inputs: ["a"] }, "shoal_x_y"))).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
  });

  it("is PERMISSION_DENIED outside the grants and NOT_FOUND for a hidden adapter", async () => {
    const denied = await grpcError(
      call("Score", { model: TINY.ner, query: "q", documents: ["d"] }, acmeKey),
    );
    // A NER model cannot score, but the grant is checked first: nothing about it leaks.
    expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${acmeKey}`);
    const hidden = await grpcError(
      collectStream(
        stub.Generate(
          { model: `${SMOLLM2}:beta-secret`, prompt: "hi", sampling: { maxTokens: 2 } },
          metadata,
          {},
        ),
      ),
    );
    expect(hidden.code).toBe(grpc.status.NOT_FOUND);
  });
});

describe("revoking a key", { timeout: 60_000 }, () => {
  let second: RunningIngress;
  beforeAll(async () => {
    second = await run({
      natsServers: cluster.nats.url,
      catalog: compileCatalog(catalogDocument, { modelsDir: "/unused" }),
      port: 0,
      access: "keys",
      logger: createLogger({ service: "ingress-2", level: "warn" }),
      tracer: trace.getTracer("test"),
    });
  });
  afterAll(async () => {
    await second.stop();
  });

  it("stops the key working on every ingress within 5 s, and audits each refusal", async () => {
    const { key, record } = await tenants.createKey("acme", "short-lived");
    const urls = [cluster.baseUrl, `http://127.0.0.1:${second.port}`];
    // Both ingresses learn of the new key through their watch.
    for (const url of urls) {
      await expect
        .poll(
          () =>
            openai(key, url)
              .models.list()
              .then(
                () => "ok",
                () => "refused",
              ),
          {
            timeout: 5_000,
          },
        )
        .toBe("ok");
    }
    const revokedAt = Date.now();
    await tenants.revokeKey(record.prefix);
    for (const url of urls) {
      await expect
        .poll(
          () =>
            openai(key, url)
              .models.list()
              .then(
                () => "ok",
                (e: unknown) => (e instanceof AuthenticationError ? "401" : String(e)),
              ),
          { timeout: 5_000, interval: 50 },
        )
        .toBe("401");
    }
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    expect(audit).toContainEqual(
      expect.objectContaining({ key_prefix: record.prefix, reason: "revoked" }),
    );
  });
});

describe("the admin API", { timeout: 60_000 }, () => {
  let opsKey: string;
  beforeAll(async () => {
    await tenants.createTenant("ops", { models: [], admin: ["tenants"] });
    opsKey = (await tenants.createKey("ops", "admin")).key;
  });

  const admin = (method: string, path: string, key: string | undefined, body?: unknown) =>
    fetch(`${cluster.baseUrl}/admin/v1${path}`, {
      method,
      headers: {
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined
        ? {}
        : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });

  it("needs a key with the tenants grant: 401 without one, 403 with acme's", async () => {
    expect((await admin("GET", "/tenants", undefined)).status).toBe(401);
    const denied = await admin("GET", "/tenants", acmeKey);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ error: { code: "permission_denied" } });
    expect(audit).toContainEqual(
      expect.objectContaining({ action: "tenant.list", outcome: "denied", tenant: "acme" }),
    );
  });

  it("creates a tenant and a key that works, lists keys without digests, revokes", async () => {
    const created = await admin("PUT", "/tenants/gamma", opsKey, { models: [EMB] });
    expect(created.status).toBe(201);
    const made = await admin("POST", "/tenants/gamma/keys", opsKey, { label: "svc" });
    expect(made.status).toBe(201);
    const { key, prefix } = (await made.json()) as { key: string; prefix: string };
    await expect
      .poll(() =>
        openai(key)
          .embeddings.create({ model: EMB, input: "x" })
          .then(
            () => "ok",
            (e: unknown) => String(e),
          ),
      )
      .toBe("ok");
    const listed = (await (await admin("GET", "/keys?tenant=gamma", opsKey)).json()) as {
      keys: Record<string, unknown>[];
    };
    expect(listed.keys).toEqual([expect.objectContaining({ prefix, label: "svc" })]);
    expect(listed.keys[0]).not.toHaveProperty("digest");
    expect((await admin("DELETE", `/keys/${prefix}`, opsKey)).status).toBe(200);
    await expect
      .poll(() =>
        openai(key)
          .models.list()
          .then(
            () => "ok",
            (e: unknown) => (e instanceof AuthenticationError ? "401" : String(e)),
          ),
      )
      .toBe("401");
    expect(audit).toContainEqual(
      expect.objectContaining({ action: "key.create", outcome: "done", tenant: "ops" }),
    );
  });

  it("answers bad bodies 400, unknown tenants and keys 404, wrong methods 405", async () => {
    expect((await admin("PUT", "/tenants/delta", opsKey, "{nope")).status).toBe(400);
    expect((await admin("PUT", "/tenants/delta", opsKey, { admin: ["root"] })).status).toBe(400);
    expect((await admin("PUT", "/tenants/delta", opsKey, [])).status).toBe(400);
    expect((await admin("POST", "/tenants/nobody/keys", opsKey, {})).status).toBe(404);
    expect((await admin("POST", "/tenants/gamma/keys", opsKey, { label: 7 })).status).toBe(400);
    expect((await admin("DELETE", "/keys/aaaaaaaa", opsKey)).status).toBe(404);
    expect((await admin("GET", "/tenants/Upper", opsKey)).status).toBe(404);
    const wrong = await admin("DELETE", "/tenants", opsKey);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET");
  });
});

describe("quotas and usage", { timeout: 60_000 }, () => {
  it("answers 429 with Retry-After once a tenant is over its requests/s", async () => {
    await tenants.createTenant("tiny", { models: [EMB], admin: [] }, { requestsPerSecond: 2 });
    const key = (await tenants.createKey("tiny", "quota")).key;
    const embed = () =>
      fetch(`${cluster.baseUrl}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: EMB, input: "x" }),
      });
    await expect.poll(async () => (await embed()).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 6 }, embed));
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(Number(refused[0]?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const body = (await refused[0]?.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("rate_limit_error");
    expect(body.error.message).toMatch(/tiny is over its 2 requests\/s/);
    // The official SDK sees the same as its RateLimitError.
    const sdk = await openai(key)
      .embeddings.create({ model: EMB, input: "x" })
      .catch((e: unknown) => e);
    expect(sdk).toBeInstanceOf(RateLimitError);
  });

  it("counts each tenant's tokens per model, readable through the admin API", async () => {
    await openai(acmeKey).embeddings.create({ model: EMB, input: ["one two three", "four"] });
    const usage = async (key: string, query = "") => {
      const answer = await fetch(`${cluster.baseUrl}/admin/v1/usage${query}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return {
        status: answer.status,
        body: (await answer.json()) as { usage: Record<string, unknown>[] },
      };
    };
    // Ingress adds its counts to the usage bucket every few seconds.
    await expect
      .poll(async () => (await usage(acmeKey)).body.usage, { timeout: 15_000, interval: 500 })
      .toContainEqual(expect.objectContaining({ tenant: "acme", model: EMB }));
    const own = (await usage(acmeKey)).body.usage;
    expect(own.every((u) => u["tenant"] === "acme")).toBe(true);
    const generated = own.find((u) => u["model"] === SMOLLM2);
    expect(generated?.["outputTokens"]).toBeGreaterThan(0);
    // Without the usage grant a key reads only its own tenant.
    expect((await usage(acmeKey, "?tenant=beta")).status).toBe(403);
  });
});

describe("Python clients (tools/clients-py/auth)", () => {
  it("pass pytest: the openai SDK and grpcio with and without keys", async () => {
    const { code, output } = await runPytest(["tools/clients-py/auth"], cluster.baseUrl, {
      SHOAL_API_KEY: acmeKey,
      SHOAL_GRANTED_MODEL: EMB,
      SHOAL_UNGRANTED_MODEL: TINY.ner,
      SHOAL_HIDDEN_ADAPTER: `${SMOLLM2}:beta-secret`,
    });
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
    expect(output, output).toMatch(/\b4 passed\b/);
  }, 300_000);
});
