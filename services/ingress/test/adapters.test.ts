import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AdapterStore, readBaseShape, validateLoraAdapter } from "@shoal/adapters";
import { freePort, repoRoot, scrapeMetrics, sidecarPidOf, smollm2Dir } from "@shoal/testing";
import OpenAI, { NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPytest } from "./support/pytest.js";
import {
  SMOLLM2,
  startGenerationCluster,
  type GenerationCluster,
} from "./support/generation-cluster.js";

// A LoRA adapter, published to the registry's store, addressed as `base:adapter[@version]` by
// the official `openai` npm package against a real cluster: the worker fetches it, the sidecar
// loads it, and the answer is the adapter's.

const ADAPTER_DIR = join(repoRoot(), "tools", "reference", "fixtures", "smollm2-lora");
const BASE = { id: SMOLLM2, key: "smollm2-135m-instruct" };

let cluster: GenerationCluster;
let nc: NatsConnection;
let store: AdapterStore;
let client: OpenAI;
let metricsPort: number;

async function publish(name: string) {
  const files = {
    config: await readFile(join(ADAPTER_DIR, "adapter_config.json")),
    weights: await readFile(join(ADAPTER_DIR, "adapter_model.safetensors")),
  };
  const summary = validateLoraAdapter(files, await readBaseShape(smollm2Dir(), "gguf"));
  return store.publish({ base: BASE, name, owner: "tests", files, summary });
}

beforeAll(async () => {
  // One adapter per model at a time, so loading a second evicts the first.
  metricsPort = await freePort();
  cluster = await startGenerationCluster({
    env: { SHOAL_MAX_ADAPTERS_PER_MODEL: "1", SHOAL_METRICS_PORT: String(metricsPort) },
  });
  nc = await connect({ servers: cluster.nats.url });
  store = await AdapterStore.open(nc);
  client = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
}, 360_000);

afterAll(async () => {
  await nc.close();
  await cluster.stop();
});

/** The adapters SmolLM2's sidecar holds now. */
async function loadedAdapters(): Promise<string[]> {
  const smol = (await cluster.sidecarStats()).models.find((m) => m.model === BASE.key);
  return smol?.adapters?.map((a) => a.adapter) ?? [];
}

const chat = (model: string) =>
  client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Write a short poem about the sea, please." }],
    max_tokens: 24,
    temperature: 0,
  });

describe("LoRA adapters through ingress", { timeout: 240_000 }, () => {
  it("answers `base:adapter` with the adapter's text, `base` with the base model's", async () => {
    const published = await publish("sea-poet");
    expect(published.model).toBe(`${SMOLLM2}:sea-poet@1`);
    // Ingress learns of it through its watch of the index.
    await expect
      .poll(async () => (await client.models.list()).data.map((m) => m.id), { timeout: 10_000 })
      .toContain(`${SMOLLM2}:sea-poet`);

    const [adapted, pinned, plain] = await Promise.all([
      chat(`${SMOLLM2}:sea-poet`),
      chat(`${SMOLLM2}:sea-poet@1`),
      chat(SMOLLM2),
    ]);
    const text = (r: typeof plain) => r.choices[0]?.message.content ?? "";
    expect(text(adapted)).not.toBe("");
    expect(text(adapted)).not.toBe(text(plain));
    expect(text(pinned)).toBe(text(adapted));
    expect(adapted.model).toBe(`${SMOLLM2}:sea-poet`);

    const stats = await cluster.sidecarStats();
    const smol = stats.models.find((m) => m.model === BASE.key);
    expect(smol?.adapters?.map((a) => a.adapter)).toEqual(["sea-poet@1"]);

    // The worker's metrics: the first adapter request missed (a second one arriving while it
    // loaded shares that load, and misses too), and every sequence's first tokens were timed.
    const samples = await scrapeMetrics(metricsPort);
    const model = `model="${BASE.key}"`;
    const lookups = (result: string) =>
      samples.get(`shoal_worker_adapter_lookups_total{${model},result="${result}"}`) ?? 0;
    expect(lookups("miss")).toBeGreaterThanOrEqual(1);
    expect(lookups("miss") + lookups("hit")).toBe(2);
    expect(samples.get(`shoal_worker_generation_first_token_seconds_count{${model}}`)).toBe(3);
    expect(
      samples.get(`shoal_worker_generation_first_token_seconds_sum{${model}}`),
    ).toBeGreaterThan(0);
    expect(samples.get(`shoal_worker_generations_total{${model},outcome="ok"}`)).toBe(3);
  });

  it("streams with an adapter too", async () => {
    const stream = await client.chat.completions.create({
      model: `${SMOLLM2}:sea-poet`,
      messages: [{ role: "user", content: "Write a short poem about the sea, please." }],
      max_tokens: 24,
      temperature: 0,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe((await chat(`${SMOLLM2}:sea-poet`)).choices[0]?.message.content);
    // Both found the adapter loaded.
    const samples = await scrapeMetrics(metricsPort);
    const lookups = (result: string) =>
      samples.get(`shoal_worker_adapter_lookups_total{model="${BASE.key}",result="${result}"}`) ??
      0;
    expect(lookups("miss") + lookups("hit")).toBe(4);
    expect(lookups("hit")).toBeGreaterThanOrEqual(2);
  });

  it("refuses unknown adapters and versions with 404, malformed references with 400", async () => {
    await expect(chat(`${SMOLLM2}:nobody`)).rejects.toBeInstanceOf(NotFoundError);
    await expect(chat(`${SMOLLM2}:sea-poet@9`)).rejects.toBeInstanceOf(NotFoundError);
    await expect(chat(`${SMOLLM2}:Not A Name`)).rejects.toMatchObject({ status: 400 });
    await expect(chat(`${SMOLLM2}:sea-poet@0`)).rejects.toMatchObject({ status: 400 });
  });

  it("answers 404 once a version is deleted, and serves the next one", async () => {
    const second = await publish("sea-poet");
    expect(second.version.version).toBe(2);
    await store.remove(BASE.key, "sea-poet", { version: 1 });
    await expect
      .poll(
        () =>
          chat(`${SMOLLM2}:sea-poet@1`).then(
            () => "served",
            () => "refused",
          ),
        {
          timeout: 10_000,
        },
      )
      .toBe("refused");
    const latest = await chat(`${SMOLLM2}:sea-poet`);
    expect(latest.choices[0]?.message.content).not.toBe("");
    const smol = (await cluster.sidecarStats()).models.find((m) => m.model === BASE.key);
    expect(smol?.adapters?.map((a) => a.adapter)).toContain("sea-poet@2");
  });
});

describe("an adapter evicted while a stream uses it", { timeout: 240_000 }, () => {
  it("finishes the running stream with that adapter's text", async () => {
    await publish("tide-poet");
    await publish("reef-poet");
    const request = (model: string) => ({
      model,
      messages: [{ role: "user" as const, content: "Write a long poem about the sea, please." }],
      max_tokens: 96,
      temperature: 0,
    });
    const text = (r: { choices: { message: { content: string | null } }[] }) =>
      r.choices[0]?.message.content ?? "";
    const control = text(await client.chat.completions.create(request(`${SMOLLM2}:tide-poet`)));
    // The adapter changes this answer, so a stream that lost it midway would end differently.
    expect(control).not.toBe(text(await client.chat.completions.create(request(SMOLLM2))));
    expect(await loadedAdapters()).toEqual(["tide-poet@1"]);

    const chunks = await client.chat.completions.create({
      ...request(`${SMOLLM2}:tide-poet`),
      stream: true,
    });
    let streamed = "";
    const progress = { finished: false };
    let evictedMidStream: Promise<boolean> | undefined;
    for await (const chunk of chunks) {
      streamed += chunk.choices[0]?.delta.content ?? "";
      // A request for another adapter makes the worker unload this one, mid-stream.
      evictedMidStream ??= (async () => {
        const other = chat(`${SMOLLM2}:reef-poet`);
        await expect
          .poll(loadedAdapters, { timeout: 30_000, interval: 20 })
          .not.toContain("tide-poet@1");
        const midStream = !progress.finished;
        await other;
        return midStream;
      })();
    }
    progress.finished = true;
    expect(await evictedMidStream).toBe(true);
    expect(streamed).toBe(control);
    expect(await loadedAdapters()).toEqual(["reef-poet@1"]);
  });
});

describe("a sidecar that restarted", { timeout: 240_000 }, () => {
  it("has lost its adapters: the worker loads the adapter again and answers", async () => {
    const before = (await chat(`${SMOLLM2}:reef-poet`)).choices[0]?.message.content;
    process.kill(sidecarPidOf(cluster.worker.pid), "SIGKILL");
    await expect
      .poll(() => cluster.worker.output(), { timeout: 30_000 })
      .toMatch(/sidecar exited; restarting it/);
    // The worker still believes reef-poet loaded; its replacement sidecar says it is not.
    const after = await chat(`${SMOLLM2}:reef-poet`);
    expect(after.choices[0]?.message.content).toBe(before);
    expect(cluster.worker.output()).toMatch(
      /"code":"adapter_not_found".*"msg":"generation failed before its first event; retrying"/,
    );
  });
});

describe("Python clients (tools/clients-py/adapters)", () => {
  it("pass pytest: the openai SDK and grpcio naming the adapter", async () => {
    const { code, output } = await runPytest(["tools/clients-py/adapters"], cluster.baseUrl, {
      SHOAL_ADAPTER: `${SMOLLM2}:sea-poet`,
    });
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
    expect(output, output).toMatch(/\b3 passed\b/);
    expect(output, output).not.toMatch(/skipped|xfail|xpass|deselected/);
  }, 300_000);
});
