import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { groupTraces, isConnected, type TraceSpan } from "@shoal/traces";
import {
  repoRoot,
  scrapeMetrics,
  startJaeger,
  tarArchive,
  tempDir,
  tinyHeadsCatalogDocument,
  TINY,
  type JaegerHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startUp, type UpProcess } from "./up-process.js";

// The whole cluster as `npm start` runs it, exporting traces to the real trace backend
// (Jaeger) and serving metrics, with a catalog of every family: MiniLM embeddings, the tiny
// rerank, classify and extract heads, SmolLM2 chat and a LoRA adapter of it. Every request
// carries a sampled `traceparent`, so the default parent-based sampler records it; its trace
// must come back from the backend as one connected tree through every process it touched.
// Then every service's metrics are scraped and must have moved as the requests did.

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
const SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct";
const ADAPTER_DIR = join(repoRoot(), "tools", "reference", "fixtures", "smollm2-lora");

let jaeger: JaegerHandle;
let up: UpProcess;

beforeAll(async () => {
  jaeger = await startJaeger();
  const dir = await tempDir("observability");
  const shipped = JSON.parse(
    await readFile(join(repoRoot(), "deploy", "catalog", "default.json"), "utf8"),
  ) as { models: object[] };
  const catalog = join(dir, "catalog.json");
  await writeFile(
    catalog,
    JSON.stringify({ models: [...shipped.models, ...tinyHeadsCatalogDocument().models] }),
  );
  up = await startUp({
    SHOAL_CATALOG: catalog,
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    // Small enough that one long input goes through the blob offloader.
    SHOAL_OFFLOAD_THRESHOLD_BYTES: "4096",
    // Its own adapter cache: the adapter is fetched on first use in every run.
    SHOAL_ADAPTERS: join(dir, "adapters"),
  });
}, 300_000);

afterAll(async () => {
  try {
    await up.interrupt();
  } finally {
    up.kill();
    await jaeger.stop();
  }
}, 60_000);

/** A fresh sampled W3C trace context, as a client's tracer would send it. */
function traceparent(): { header: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

async function post(path: string, body: object, header: string): Promise<Response> {
  return fetch(`${up.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: header },
    body: JSON.stringify(body),
  });
}

/**
 * Sends a request under a new trace and returns the trace once it holds every span in
 * `expected` (`service/name`), checking that it is one tree rooted at ingress, whose parent is
 * the client's span.
 */
async function tracedRequest(
  path: string,
  body: object,
  expected: readonly string[],
): Promise<TraceSpan[]> {
  const tp = traceparent();
  const res = await post(path, body, tp.header);
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  const names = (spans: readonly TraceSpan[]) =>
    new Set(spans.map((s) => `${s.service}/${s.name}`));
  const spans = await jaeger.waitForTrace(
    tp.traceId,
    // The edge's span ends last, with the answer: wait for it too.
    (s) => expected.every((e) => names(s).has(e)) && s.some((x) => x.name.startsWith("ingress.")),
    30_000,
  );
  const [trace, ...others] = groupTraces(spans);
  expect(others).toEqual([]);
  expect(trace?.root.name).toMatch(/^ingress\./);
  expect(trace?.root.parentSpanId).toBe(tp.spanId);
  expect(trace !== undefined && isConnected(trace), [...names(spans)].join(", ")).toBe(true);
  return spans;
}

const EDGE = ["shoal-ingress/annotate", "shoal-worker/queue.wait"];

describe("one connected trace per request, through every process it touched", () => {
  it("embeddings, with a long input through the blob offloader", async () => {
    await tracedRequest(
      "/v1/embeddings",
      { model: MINILM, input: ["the blob offloader keeps this ".repeat(300), "short"] },
      [
        "shoal-ingress/ingress.embeddings",
        ...EDGE,
        "shoal-ingress/blob.offload",
        "shoal-blob-offloader/offloader.upload",
        "shoal-worker/blob.fetch",
        "shoal-worker/worker.batch",
        "shoal-sidecar/sidecar.embed",
      ],
    );
  }, 60_000);

  it("rerank, classify and extract, each waiting for its model's first load", async () => {
    const calls = [
      [
        "/v1/rerank",
        { model: TINY.crossEncoder, query: "q", documents: ["a", "b"] },
        "sidecar.score",
      ],
      ["/v1/extract", { model: TINY.classifier, input: ["classify me"] }, "sidecar.classify"],
      ["/v1/extract", { model: TINY.ner, input: ["Ada lives in London"] }, "sidecar.extract"],
    ] as const;
    for (const [path, body, computed] of calls) {
      await tracedRequest(path, body, [
        ...EDGE,
        "shoal-worker/model.load",
        "shoal-worker/worker.batch",
        `shoal-sidecar/${computed}`,
      ]);
    }
  }, 180_000);

  it("chat, waiting for SmolLM2's load, with sampled decode steps", async () => {
    await tracedRequest(
      "/v1/chat/completions",
      { model: SMOLLM2, messages: [{ role: "user", content: "Say hi." }], max_tokens: 4 },
      [
        "shoal-ingress/ingress.chat_completions",
        ...EDGE,
        "shoal-worker/model.load",
        "shoal-worker/worker.generate",
        "shoal-sidecar/sidecar.generate",
        "shoal-sidecar/sidecar.decode_step",
      ],
    );
  }, 300_000);

  it("chat with a LoRA adapter uploaded to the registry, fetched and loaded on first use", async () => {
    const archive = tarArchive([
      {
        name: "adapter_config.json",
        data: await readFile(join(ADAPTER_DIR, "adapter_config.json")),
      },
      {
        name: "adapter_model.safetensors",
        data: await readFile(join(ADAPTER_DIR, "adapter_model.safetensors")),
      },
    ]);
    const registry = `http://127.0.0.1:${up.env.SHOAL_REGISTRY_PORT}`;
    const uploaded = await fetch(`${registry}/v1/adapters/smollm2-135m-instruct/traced`, {
      method: "PUT",
      headers: { authorization: "Bearer any", "content-type": "application/x-tar" },
      body: archive,
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    await expect
      .poll(
        async () => {
          const res = await fetch(`${up.baseUrl}/v1/models`);
          const models = (await res.json()) as { data: { id: string }[] };
          return models.data.map((m) => m.id);
        },
        { timeout: 15_000 },
      )
      .toContain(`${SMOLLM2}:traced`);
    await tracedRequest(
      "/v1/chat/completions",
      { model: `${SMOLLM2}:traced`, messages: [{ role: "user", content: "Hi" }], max_tokens: 4 },
      [
        ...EDGE,
        "shoal-worker/adapter.ensure",
        "shoal-worker/adapter.fetch",
        "shoal-sidecar/sidecar.load_adapter",
        "shoal-sidecar/sidecar.generate",
      ],
    );
  }, 120_000);
});

describe("every service's metrics move with what the cluster served", () => {
  const port = (name: string): number => Number(up.env[name]);

  it("counts requests per model, loads after cold requests, adapter misses, uploads and busy time", async () => {
    const ingress = await scrapeMetrics(port("SHOAL_INGRESS_METRICS_PORT"));
    const worker = await scrapeMetrics(port("SHOAL_WORKER_METRICS_PORT"));
    const loader = await scrapeMetrics(port("SHOAL_LOADER_METRICS_PORT"));
    const registry = await scrapeMetrics(port("SHOAL_REGISTRY_METRICS_PORT"));
    const offloader = await scrapeMetrics(port("SHOAL_OFFLOADER_METRICS_PORT"));
    // The warm-up embedding of up.sh and the test's.
    expect(
      ingress.get(
        `shoal_ingress_requests_total{route="embeddings",model="${MINILM}",outcome="ok"}`,
      ),
    ).toBe(2);
    expect(
      ingress.get(
        `shoal_ingress_requests_total{route="rerank",model="${TINY.crossEncoder}",outcome="ok"}`,
      ),
    ).toBe(1);
    // SmolLM2 twice: once itself, once through its adapter.
    const chats = [...ingress.entries()]
      .filter(([k]) => k.startsWith('shoal_ingress_requests_total{route="chat_completions"'))
      .filter(([k]) => k.includes('outcome="ok"'))
      .reduce((n, [, v]) => n + v, 0);
    expect(chats).toBe(2);
    for (const model of [
      "tiny-cross-encoder",
      "tiny-classifier",
      "tiny-ner",
      "smollm2-135m-instruct",
    ]) {
      expect(
        worker.get(`shoal_worker_model_loads_total{model="${model}",outcome="ok"}`),
        model,
      ).toBe(1);
    }
    expect(
      worker.get('shoal_worker_adapter_lookups_total{model="smollm2-135m-instruct",result="miss"}'),
    ).toBe(1);
    expect(
      worker.get('shoal_sidecar_busy_seconds_total{model="all-minilm-l6-v2"}'),
    ).toBeGreaterThan(0);
    expect(
      worker.get('shoal_sidecar_generated_tokens_total{model="smollm2-135m-instruct"}'),
    ).toBeGreaterThan(0);
    expect(loader.get('shoal_loader_resident_copies{model="tiny-ner"}')).toBe(1);
    expect(registry.get('shoal_registry_requests_total{operation="upload",status="201"}')).toBe(1);
    expect(offloader.get('shoal_offloader_uploads_total{outcome="stored"}')).toBe(1);
  });

  it("shows the queue growing while the worker is paused, and drains it after", async () => {
    const [workerPid] = up.pids("services/worker/src/main.ts");
    expect(workerPid).toBeGreaterThan(0);
    const pending = async (): Promise<number> =>
      (await scrapeMetrics(port("SHOAL_INGRESS_METRICS_PORT"))).get(
        'shoal_queue_pending_messages{model="all-minilm-l6-v2"}',
      ) ?? 0;
    const age = async (): Promise<number> =>
      (await scrapeMetrics(port("SHOAL_INGRESS_METRICS_PORT"))).get(
        'shoal_queue_oldest_message_age_seconds{model="all-minilm-l6-v2"}',
      ) ?? 0;
    process.kill(workerPid ?? 0, "SIGSTOP");
    let answers: Promise<number[]> | undefined;
    try {
      // Sent one after another, so each is its own message.
      answers = Promise.all(
        [0, 1, 2].map(async (i) => {
          await new Promise((r) => setTimeout(r, i * 300));
          const res = await post(
            "/v1/embeddings",
            { model: MINILM, input: [`paused ${i}`] },
            traceparent().header,
          );
          await res.arrayBuffer();
          return res.status;
        }),
      );
      await expect.poll(pending, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      await expect.poll(age, { timeout: 10_000 }).toBeGreaterThan(0.5);
    } finally {
      process.kill(workerPid ?? 0, "SIGCONT");
    }
    expect(await answers).toEqual([200, 200, 200]);
    await expect.poll(pending, { timeout: 10_000 }).toBe(0);
  }, 60_000);
});
