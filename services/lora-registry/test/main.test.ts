import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  smollm2CatalogDocument,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACME, adapterArchive, SMOLLM2_ID, SMOLLM2_KEY, TOKENS } from "./support.js";

let nats: NatsServerHandle;
let service: ServiceHandle;
let url: string;

beforeAll(async () => {
  nats = await startNatsServer();
  const dir = await tempDir("registry-main");
  await writeFile(join(dir, "catalog.json"), JSON.stringify(smollm2CatalogDocument()));
  await writeFile(join(dir, "tokens.json"), JSON.stringify(TOKENS));
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  service = await startService("lora-registry", {
    env: {
      NATS_URL: nats.url,
      SHOAL_CATALOG: join(dir, "catalog.json"),
      SHOAL_BUNDLE: "none",
      SHOAL_REGISTRY_PORT: String(port),
      SHOAL_REGISTRY_TOKENS_FILE: join(dir, "tokens.json"),
      SHOAL_REGISTRY_MAX_UPLOAD_BYTES: String(8 * 1024 * 1024),
      SHOAL_REGISTRY_MAX_RANK: "4",
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

describe("the lora-registry process", () => {
  it("reads its settings from the environment", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // SHOAL_REGISTRY_TOKENS_FILE: tokens are required.
    expect((await put(await adapterArchive({ rank: 4 }))).status).toBe(401);
    // SHOAL_REGISTRY_MAX_RANK=4.
    const tooWide = await put(await adapterArchive({ rank: 8 }), ACME);
    expect(await tooWide.json()).toEqual({
      error: {
        code: "invalid_adapter",
        message: "adapter_config.json: r must be an integer from 1 to 4, found 8",
      },
    });
    const created = await put(await adapterArchive({ rank: 4 }), ACME);
    expect(created.status).toBe(201);
    expect(((await created.json()) as { model: string }).model).toBe(`${SMOLLM2_ID}:from-main@1`);
    // SHOAL_REGISTRY_MAX_UPLOAD_BYTES=8 MiB, refused from the declared length.
    expect((await put(Buffer.alloc(8 * 1024 * 1024 + 1), ACME)).status).toBe(413);
  });

  it("logs JSON lines without tokens, and stops cleanly on SIGTERM", async () => {
    expect(service.output()).toContain('"msg":"lora registry listening"');
    for (const token of Object.keys(TOKENS)) expect(service.output()).not.toContain(token);
    const exit = await service.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(service.output()).toContain('"msg":"lora registry stopped"');
  });
});
