import { writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import {
  freePort,
  scrapeMetrics,
  smollm2CatalogDocument,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { adapterArchive, makeTenants, SMOLLM2_ID, SMOLLM2_KEY } from "./support.js";

let nats: NatsServerHandle;
let service: ServiceHandle;
let url: string;
let metricsPort: number;
let keys: { readonly acme: string; readonly globex: string };

beforeAll(async () => {
  nats = await startNatsServer();
  const dir = await tempDir("registry-main");
  await writeFile(join(dir, "catalog.json"), JSON.stringify(smollm2CatalogDocument()));
  const nc = await connect({ servers: nats.url });
  keys = await makeTenants(nc);
  await nc.close();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  metricsPort = await freePort();
  service = await startService("lora-registry", {
    env: {
      NATS_URL: nats.url,
      SHOAL_CATALOG: join(dir, "catalog.json"),
      SHOAL_BUNDLE: "none",
      SHOAL_REGISTRY_PORT: String(port),
      SHOAL_AUTH: "keys",
      SHOAL_REGISTRY_MAX_UPLOAD_BYTES: String(8 * 1024 * 1024),
      SHOAL_REGISTRY_MAX_RANK: "4",
      SHOAL_METRICS_PORT: String(metricsPort),
    },
    readyMessage: "lora registry listening",
  });
});

afterAll(async () => {
  await service.stop();
  await nats.stop();
});

const put = (body: Buffer, token?: string) =>
  fetch(`${url}/v1/adapters/${SMOLLM2_KEY}/from-main`, {
    method: "PUT",
    body,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });

/** The status of an upload that declares `bytes` and waits for `100 Continue` to send them. */
function declaredPut(bytes: number, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/adapters/${SMOLLM2_KEY}/from-main`, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${token}`,
        "content-length": String(bytes),
        expect: "100-continue",
      },
    });
    req.on("continue", () => req.end(Buffer.alloc(bytes)));
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on("error", reject);
    req.flushHeaders();
  });
}

describe("the lora-registry process", () => {
  it("reads its settings from the environment", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // SHOAL_AUTH=keys: an API key is required.
    expect((await put(await adapterArchive({ rank: 4 }))).status).toBe(401);
    // SHOAL_REGISTRY_MAX_RANK=4.
    const tooWide = await put(await adapterArchive({ rank: 8 }), keys.acme);
    expect(await tooWide.json()).toEqual({
      error: {
        code: "invalid_adapter",
        message: "adapter_config.json: r must be an integer from 1 to 4, found 8",
      },
    });
    const created = await put(await adapterArchive({ rank: 4 }), keys.acme);
    expect(created.status).toBe(201);
    expect(((await created.json()) as { model: string }).model).toBe(`${SMOLLM2_ID}:from-main@1`);
    // SHOAL_REGISTRY_MAX_UPLOAD_BYTES=8 MiB, refused from the declared length before the body
    // is sent (a client that sent it anyway could see the closed connection before the 413).
    expect(await declaredPut(8 * 1024 * 1024 + 1, keys.acme)).toBe(413);

    // SHOAL_METRICS_PORT: each request counted by operation and status, no names as labels.
    const samples = await scrapeMetrics(metricsPort);
    const uploads = (status: number) =>
      samples.get(`shoal_registry_requests_total{operation="upload",status="${status}"}`);
    expect([uploads(401), uploads(400), uploads(201), uploads(413)]).toEqual([1, 1, 1, 1]);
    expect(samples.get('shoal_registry_requests_total{operation="health",status="200"}')).toBe(1);
    expect(samples.get("shoal_registry_published_adapter_bytes_count")).toBe(1);
    expect(samples.get("shoal_registry_uploads_in_progress")).toBe(0);
  });

  it("logs JSON lines without keys, and stops cleanly on SIGTERM", async () => {
    expect(service.output()).toContain('"msg":"lora registry listening"');
    for (const key of [keys.acme, keys.globex]) {
      expect(service.output()).not.toContain(key.slice(-43));
    }
    const exit = await service.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(service.output()).toContain('"msg":"lora registry stopped"');
  });
});
