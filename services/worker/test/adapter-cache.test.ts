import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import {
  AdapterNotFoundError,
  AdapterStore,
  readBaseShape,
  validateLoraAdapter,
} from "@shoal/adapters";
import { SidecarClient } from "@shoal/sidecar-client";
import { createLogger } from "@shoal/telemetry";
import {
  repoRoot,
  smollm2Dir,
  smollm2Gguf,
  startNatsServer,
  startSidecar,
  tempDir,
  type NatsServerHandle,
  type SidecarHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AdapterCache, AdapterGoneError } from "../src/adapter-cache.js";

// The worker's adapter cache against the real registry store on a real nats-server and the
// real sidecar with SmolLM2: fetch on first use, one load for concurrent requests, least
// recently used unloaded past the cap, a deleted version reported as gone.

const MODEL = "smollm2-135m-instruct";
const ADAPTER_DIR = join(repoRoot(), "tools", "reference", "fixtures", "smollm2-lora");

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: AdapterStore;
let sidecar: SidecarHandle;
let client: SidecarClient;
const spans = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });

/** The `adapter.ensure` spans' cache results and how many adapter fetches were traced. */
function traced(): { results: unknown[]; fetches: number } {
  const finished = spans.getFinishedSpans();
  spans.reset();
  return {
    results: finished
      .filter((s) => s.name === "adapter.ensure")
      .map((s) => s.attributes["shoal.adapter_cache"])
      .sort(),
    fetches: finished.filter((s) => s.name === "adapter.fetch").length,
  };
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await AdapterStore.open(nc);
  const files = {
    config: await readFile(join(ADAPTER_DIR, "adapter_config.json")),
    weights: await readFile(join(ADAPTER_DIR, "adapter_model.safetensors")),
  };
  const summary = validateLoraAdapter(files, await readBaseShape(smollm2Dir(), "gguf"));
  const base = { id: "HuggingFaceTB/SmolLM2-135M-Instruct", key: MODEL };
  for (const name of ["a", "b"]) await store.publish({ base, name, owner: "t", files, summary });
  sidecar = await startSidecar({ models: { [MODEL]: smollm2Gguf() } });
  client = await SidecarClient.connect({ socketPath: sidecar.socketPath });
}, 180_000);

afterAll(async () => {
  await client.close();
  await sidecar.stop();
  await nc.close();
  await nats.stop();
});

async function loaded(): Promise<string[]> {
  const smol = (await client.stats()).models.find((m) => m.model === MODEL);
  return (smol?.adapters ?? []).map((a) => a.adapter).sort();
}

it("fetches and loads on first use, once for concurrent uses, and unloads the least recently used past its cap", async () => {
  const cache = new AdapterCache({
    source: {
      fetch: (baseKey, name, version, dir) => store.fetch(baseKey, name, version, dir),
      isNotFound: (err) => err instanceof AdapterNotFoundError,
    },
    dir: await tempDir("adapter-cache"),
    maxLoadedPerModel: 1,
    logger: createLogger({ service: "test", level: "warn" }),
    tracer: provider.getTracer("test"),
  });
  const names = await Promise.all(
    [1, 2, 3].map(() => cache.ensure(client, MODEL, { name: "a", version: 1 }, ROOT_CONTEXT)),
  );
  expect(names).toEqual(["a@1", "a@1", "a@1"]);
  expect(await loaded()).toEqual(["a@1"]);
  expect(traced()).toEqual({ results: ["joined", "joined", "miss"], fetches: 1 });

  expect(await cache.ensure(client, MODEL, { name: "b", version: 1 }, ROOT_CONTEXT)).toBe("b@1");
  expect(await loaded()).toEqual(["b@1"]);

  // Fetched once: loading `a` again reads the files already on disk, even with the store
  // gone for it.
  await store.remove(MODEL, "a");
  expect(await cache.ensure(client, MODEL, { name: "a", version: 1 }, ROOT_CONTEXT)).toBe("a@1");
  expect(await loaded()).toEqual(["a@1"]);
  expect(await cache.ensure(client, MODEL, { name: "a", version: 1 }, ROOT_CONTEXT)).toBe("a@1");
  expect(traced()).toEqual({ results: ["hit", "miss", "miss"], fetches: 1 });

  // Never fetched and no longer published: gone.
  await store.remove(MODEL, "b");
  cache.forget(MODEL);
  await client.unloadAdapter(MODEL, "a@1");
  await expect(
    cache.ensure(client, MODEL, { name: "b", version: 2 }, ROOT_CONTEXT),
  ).rejects.toBeInstanceOf(AdapterGoneError);
}, 120_000);
