import { execFileSync } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  ADAPTER_BUCKET,
  adapterObjectPrefix,
  makeLoraAdapter,
  type SyntheticAdapterOptions,
} from "@shoal/adapters";
import { compileCatalog, type Catalog } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import { TenantStore } from "@shoal/tenants";
import {
  minilmDir,
  SMOLLM2_SHAPE,
  smollm2CatalogDocument,
  startNatsServer,
  tempDir,
  type NatsServerHandle,
} from "@shoal/testing";
import { run, type LoraRegistryOptions, type RunningLoraRegistry } from "../src/index.js";

export const SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct";
export const SMOLLM2_KEY = "smollm2-135m-instruct";
export const MINILM_KEY = "all-minilm-l6-v2";
export const REMOTE_KEY = "remote-chat";

/**
 * The test catalog: SmolLM2 (the real Q4_1 GGUF from this machine's model cache) as the
 * generator base, and two models adapters cannot be published for: MiniLM, an embedding
 * model, and a generator on a remote engine (which nothing here runs: the registry refuses it
 * before contacting anything).
 */
export function testCatalog(): Catalog {
  return compileCatalog(
    {
      models: [
        ...smollm2CatalogDocument().models,
        {
          id: "sentence-transformers/all-MiniLM-L6-v2",
          key: MINILM_KEY,
          family: "embedding",
          dimensions: 384,
          maxInputTokens: 256,
          source: { kind: "dir", path: minilmDir() },
        },
        {
          id: "remote/chat",
          key: REMOTE_KEY,
          family: "generator",
          dimensions: 0,
          maxInputTokens: 2048,
          source: { kind: "openai", url: "http://127.0.0.1:9", remoteModel: "chat" },
        },
      ],
    },
    { modelsDir: "/unused" },
  );
}

/** A registry on a random port against its own nats-server, with every log line kept. */
export interface TestRegistry {
  readonly url: string;
  readonly port: number;
  readonly nats: NatsServerHandle;
  readonly nc: NatsConnection;
  readonly registry: RunningLoraRegistry;
  /** API keys of the two tenants, acme and globex, in the cluster's tenant store. */
  readonly keys: { readonly acme: string; readonly globex: string };
  /** Every log line the registry wrote, as text. */
  logs(): string;
  /** Live object names stored for one adapter of SmolLM2. */
  objects(name: string): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startRegistry(
  overrides: Partial<LoraRegistryOptions> = {},
): Promise<TestRegistry> {
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  const keys = await makeTenants(nc);
  const lines: string[] = [];
  const logger = createLogger({
    service: "lora-registry",
    level: "debug",
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  });
  const registry = await run({
    natsServers: nats.url,
    catalog: testCatalog(),
    port: 0,
    access: "keys",
    maxUploadBytes: 16 * 1024 * 1024,
    idleTimeoutMs: 1000,
    logger,
    ...overrides,
  });
  const bucket = await new Objm(nc).open(ADAPTER_BUCKET);
  return {
    url: `http://127.0.0.1:${registry.port}`,
    port: registry.port,
    nats,
    nc,
    registry,
    keys,
    logs: () => lines.join(""),
    objects: async (name) => {
      const prefix = adapterObjectPrefix(SMOLLM2_KEY, name);
      return (await bucket.list())
        .filter((info) => !info.deleted && info.name.startsWith(prefix))
        .map((info) => info.name)
        .sort();
    },
    stop: async () => {
      await registry.stop();
      await nc.close();
      await nats.stop();
    },
  };
}

/** Tenants acme and globex, each with every model and one key, as `npm run keys` makes them. */
export async function makeTenants(
  nc: NatsConnection,
): Promise<{ readonly acme: string; readonly globex: string }> {
  const store = await TenantStore.open(nc, createLogger({ service: "test", level: "warn" }));
  try {
    await store.createTenant("acme");
    await store.createTenant("globex");
    return {
      acme: (await store.createKey("acme", "tests")).key,
      globex: (await store.createKey("globex", "tests")).key,
    };
  } finally {
    store.stop();
  }
}

let scratch: string | undefined;
let made = 0;

/**
 * A PEFT adapter directory written to disk (files as `save_pretrained` leaves them, plus a
 * README) and archived by GNU tar, the way an engineer would upload it: from inside the
 * directory, or (`folder`) as the directory itself, optionally gzipped.
 */
export async function adapterArchive(
  options: SyntheticAdapterOptions & {
    readonly gzip?: boolean;
    readonly folder?: boolean;
    /** Files to leave out of the directory. */
    readonly omit?: readonly string[];
    /** Files to write instead of the generated ones, by name. */
    readonly replace?: Readonly<Record<string, string | Buffer>>;
  } = {},
): Promise<Buffer> {
  scratch ??= await tempDir("lora-upload");
  const parent = join(scratch, String(made++));
  const dir = join(parent, "my-adapter");
  await mkdir(dir, { recursive: true });
  const files = makeLoraAdapter(SMOLLM2_SHAPE, options);
  const contents: Record<string, string | Buffer> = {
    "adapter_config.json": files.config,
    "adapter_model.safetensors": files.weights,
    "README.md": "# my adapter\n",
    ...options.replace,
  };
  for (const [name, data] of Object.entries(contents)) {
    if (!(options.omit ?? []).includes(name)) await writeFile(join(dir, name), data);
  }
  const flags = options.gzip === true ? "-czf" : "-cf";
  const archive =
    options.folder === true
      ? execFileSync("tar", ["-C", parent, flags, "-", "my-adapter"], { maxBuffer: 1 << 28 })
      : execFileSync("tar", ["-C", dir, flags, "-", "."], { maxBuffer: 1 << 28 });
  await rm(parent, { recursive: true });
  return archive;
}

/** The JSON answer of a request, with its status and headers. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown> & {
    readonly error?: { readonly code: string; readonly message: string };
  };
}

export async function call(
  registry: TestRegistry,
  method: string,
  path: string,
  options: {
    readonly token?: string;
    readonly body?: Buffer;
    readonly headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`;
  const response = await fetch(`${registry.url}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Answer["body"],
  };
}

/** Uploads an archive as acme (unless another key is given) to SmolLM2's adapter `name`. */
export function upload(
  registry: TestRegistry,
  name: string,
  body: Buffer,
  token: string = registry.keys.acme,
  base: string = SMOLLM2_KEY,
): Promise<Answer> {
  return call(registry, "PUT", `/v1/adapters/${base}/${name}`, { token, body });
}
