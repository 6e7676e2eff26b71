import { request } from "node:http";
import { connect as connectTcp, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { Kvm } from "@nats-io/kv";
import { ADAPTER_INDEX_BUCKET, encodeFloats, loraTensorName } from "@shoal/adapters";
import { tarArchive, tarHeader } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  adapterArchive,
  call,
  MINILM_KEY,
  REMOTE_KEY,
  SMOLLM2_KEY,
  startRegistry,
  upload,
  type Answer,
  type TestRegistry,
} from "./support.js";

let registry: TestRegistry;
const LIMIT = 16 * 1024 * 1024;

beforeAll(async () => {
  registry = await startRegistry({ maxUploadBytes: LIMIT, idleTimeoutMs: 1000 });
});

afterAll(async () => {
  await registry.stop();
});

/** Checks an upload was refused as expected and left nothing behind, in objects or the index. */
async function refused(
  name: string,
  answer: Answer,
  status: number,
  code: string,
  message: string | RegExp,
): Promise<void> {
  expect(answer.status).toBe(status);
  expect(answer.body.error?.code).toBe(code);
  expect(answer.body.error?.message).toMatch(message);
  expect(await registry.objects(name)).toEqual([]);
  const kv = await new Kvm(registry.nc).open(ADAPTER_INDEX_BUCKET);
  const entry = await kv.get(`${SMOLLM2_KEY}.${name}`);
  expect(entry === null || entry.operation !== "PUT").toBe(true);
}

const Q_A0 = loraTensorName(0, "q_proj", "A");

describe("uploads that are not acceptable archives", () => {
  it.each<[string, () => Promise<Buffer> | Buffer, number, string, string | RegExp]>([
    [
      "JSON",
      () => Buffer.from(JSON.stringify({ peft_type: "LORA", r: 8 })),
      400,
      "invalid_archive",
      "not a tar archive",
    ],
    ["an empty body", () => Buffer.alloc(0), 400, "invalid_archive", "archive is empty"],
    [
      "a truncated archive",
      async () => (await adapterArchive()).subarray(0, 300_000),
      400,
      "invalid_archive",
      /truncated/,
    ],
    [
      "a truncated gzip",
      async () => (await adapterArchive({ gzip: true })).subarray(0, 100_000),
      400,
      "invalid_archive",
      /^gzip stream is corrupt or truncated/,
    ],
    [
      "a gzip bomb",
      // 32 MiB of zeros in files each under the limit compress to about 32 KiB.
      () =>
        gzipSync(
          tarArchive(
            Array.from({ length: 8 }, (_, i) => ({
              name: `zeros-${i}`,
              data: Buffer.alloc(4 * 1024 * 1024),
            })),
          ),
        ),
      413,
      "too_large",
      /^gzip stream inflates more than 100-fold/,
    ],
    [
      "a symbolic link posing as the config",
      () => tarArchive([{ name: "adapter_config.json", type: "2", linkName: "/etc/passwd" }]),
      400,
      "invalid_archive",
      "adapter_config.json is a symbolic link; links are not accepted",
    ],
    [
      "a path climbing out of the directory",
      () => tarArchive([{ name: "../../etc/cron.d/adapter_config.json", data: "{}" }]),
      400,
      "invalid_archive",
      '".." component',
    ],
    [
      "an absolute path",
      () => tarArchive([{ name: "/tmp/adapter_model.safetensors", data: "x" }]),
      400,
      "invalid_archive",
      "absolute name",
    ],
  ])("refuses %s", async (_, body, status, code, message) => {
    await refused(
      "hostile",
      await upload(registry, "hostile", await body()),
      status,
      code,
      message,
    );
  });
});

describe("uploads of adapters that fail validation", () => {
  it.each<[string, Parameters<typeof adapterArchive>[0], string | RegExp]>([
    [
      "without its config",
      { omit: ["adapter_config.json"] },
      /^the archive has no adapter_config.json at its top level/,
    ],
    [
      "without its weights",
      { omit: ["adapter_model.safetensors"] },
      /^the archive has no adapter_model.safetensors/,
    ],
    [
      "with a config that is not JSON",
      { replace: { "adapter_config.json": "{ r: 8," } },
      /^adapter_config.json is not valid JSON/,
    ],
    [
      "with weights that are a pickle",
      { replace: { "adapter_model.safetensors": Buffer.from([0x80, 0x02, 0x7d]) } },
      /not a valid safetensors file/,
    ],
    [
      "with shapes for another base",
      {
        tensors: (t) =>
          t.map((x) =>
            x.name === Q_A0 ? { ...x, shape: [8, 512], data: x.data.subarray(0, 8 * 512 * 4) } : x,
          ),
      },
      `adapter_model.safetensors: ${Q_A0} has shape [8,512], expected [8, 576]`,
    ],
    [
      "with a NaN",
      {
        tensors: (t) =>
          t.map((x) =>
            x.name === Q_A0
              ? { ...x, data: encodeFloats(new Float32Array(8 * 576).fill(NaN, 3, 4), "F32") }
              : x,
          ),
      },
      `adapter_model.safetensors: ${Q_A0} holds a NaN or infinite value (element 3)`,
    ],
    [
      "with an unknown target module",
      { config: { target_modules: ["q_proj", "embed_tokens"] } },
      'target_modules holds "embed_tokens"',
    ],
    [
      "with a rank over the limit",
      { rank: 65, layers: [0], targetModules: ["q_proj"] },
      "adapter_config.json: r must be an integer from 1 to 64, found 65",
    ],
    [
      "with an extra tensor",
      {
        tensors: (t) => [
          ...t,
          {
            name: "base_model.model.lm_head.lora_A.weight",
            dtype: "F32",
            shape: [1, 1],
            data: new Uint8Array(4),
          },
        ],
      },
      "1 tensor(s) the config does not call for, e.g. base_model.model.lm_head.lora_A.weight",
    ],
    [
      "with mixed dtypes",
      {
        tensors: (t) =>
          t.map((x, i) =>
            i === 1 ? { ...x, dtype: "BF16", data: x.data.subarray(0, x.data.length / 2) } : x,
          ),
      },
      /all tensors must share one dtype/,
    ],
    [
      "with a regex for target modules",
      { config: { target_modules: ".*_proj" } },
      /regex or "all-linear"/,
    ],
  ])("refuses one %s, saying what is wrong", async (_, options, message) => {
    await refused(
      "invalid",
      await upload(registry, "invalid", await adapterArchive(options)),
      400,
      "invalid_adapter",
      message,
    );
  });
});

describe("requests the registry refuses before reading a body", () => {
  it.each<[string, string, number, string, string]>([
    [
      "an unknown base",
      "/v1/adapters/llama-70b/bot",
      404,
      "not_found",
      'no catalog model has the key or id "llama-70b"',
    ],
    [
      "an embedding base",
      `/v1/adapters/${MINILM_KEY}/bot`,
      400,
      "bad_request",
      "sentence-transformers/all-MiniLM-L6-v2 is a model of family embedding; adapters are for generator models",
    ],
    [
      "a base on a remote engine",
      `/v1/adapters/${REMOTE_KEY}/bot`,
      400,
      "bad_request",
      "remote/chat is served by an external engine, which loads its own adapters",
    ],
    [
      "an upper-case name",
      `/v1/adapters/${SMOLLM2_KEY}/Support-Bot`,
      400,
      "invalid_name",
      'adapter name "Support-Bot" is invalid',
    ],
    [
      "a name with a dot",
      `/v1/adapters/${SMOLLM2_KEY}/bot.v2`,
      400,
      "invalid_name",
      "adapter name",
    ],
    [
      "a malformed escape",
      `/v1/adapters/${SMOLLM2_KEY}/%E0%A4%A`,
      400,
      "bad_request",
      "not valid percent-encoding",
    ],
  ])("refuses %s", async (_, path, status, code, message) => {
    const answer = await call(registry, "PUT", path, {
      token: registry.keys.acme,
      body: await adapterArchive(),
    });
    expect(answer.status).toBe(status);
    expect(answer.body.error).toEqual({
      code,
      message: expect.stringContaining(message) as string,
    });
  });

  it("refuses a form upload as 415", async () => {
    const answer = await call(registry, "PUT", `/v1/adapters/${SMOLLM2_KEY}/form`, {
      token: registry.keys.acme,
      body: Buffer.from("--b\r\n\r\n--b--"),
      headers: { "content-type": "multipart/form-data; boundary=b" },
    });
    expect(answer.status).toBe(415);
    expect(answer.body.error?.message).toContain("curl --data-binary");
  });

  it("answers unknown paths 404 and wrong methods 405", async () => {
    expect(
      (await call(registry, "GET", "/v2/adapters", { token: registry.keys.acme })).status,
    ).toBe(404);
    const wrong = await call(registry, "POST", `/v1/adapters/${SMOLLM2_KEY}/bot`, {
      token: registry.keys.acme,
    });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("PUT, GET, DELETE");
    expect(
      (
        await call(registry, "GET", `/v1/adapters/${SMOLLM2_KEY}/bot/versions/0`, {
          token: registry.keys.acme,
        })
      ).status,
    ).toBe(400);
  });
});

/** Opens a raw connection and sends `head` only; resolves with everything the server sends until it closes. */
function rawExchange(
  head: string,
  body?: (socket: Socket) => void,
): Promise<{ reply: string; sent: number }> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(registry.port, "127.0.0.1");
    let reply = "";
    let sent = 0;
    socket.on("data", (data) => (reply += data.toString()));
    socket.on("error", reject);
    socket.on("close", () => {
      resolve({ reply, sent });
    });
    socket.write(head, () => {
      sent = 0;
      body?.(socket);
    });
  });
}

describe("bodies over the limit", () => {
  it("answers 413 to a declared length over the limit before any of the body is sent, and closes", async () => {
    const { reply } = await rawExchange(
      `PUT /v1/adapters/${SMOLLM2_KEY}/huge HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${registry.keys.acme}\r\n` +
        `content-length: ${LIMIT + 1}\r\n\r\n`,
    );
    // Not one body byte was written, yet the answer came and the server closed the connection.
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply).toContain(`"the upload is ${LIMIT + 1} bytes; the limit is ${LIMIT} bytes"`);
    expect(reply.toLowerCase()).toContain("connection: close");
    expect(await registry.objects("huge")).toEqual([]);
  });

  it("answers 413 without 100 Continue when the client asks first", async () => {
    const { reply } = await rawExchange(
      `PUT /v1/adapters/${SMOLLM2_KEY}/huge HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${registry.keys.acme}\r\n` +
        `expect: 100-continue\r\ncontent-length: ${LIMIT * 4}\r\n\r\n`,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply).not.toContain("100 Continue");
  });

  it("sends 100 Continue to an acceptable upload that asks first", async () => {
    const archive = await adapterArchive();
    const answer = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = request(
        `${registry.url}/v1/adapters/${SMOLLM2_KEY}/continued`,
        {
          method: "PUT",
          headers: {
            authorization: `Bearer ${registry.keys.acme}`,
            expect: "100-continue",
            "content-length": archive.length,
          },
        },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, continued });
        },
      );
      req.on("continue", () => {
        continued = true;
        req.end(archive);
      });
      req.on("error", reject);
    });
    expect(answer).toEqual({ status: 201, continued: true });
  });

  it("cuts a chunked body off at the limit with 413", async () => {
    let written = 0;
    const answer = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${registry.url}/v1/adapters/${SMOLLM2_KEY}/chunked`,
        {
          method: "PUT",
          headers: {
            authorization: `Bearer ${registry.keys.acme}`,
            "transfer-encoding": "chunked",
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      // A valid header for a file larger than the limit, then its bytes for as long as the
      // server reads them.
      req.write(tarHeader({ name: "adapter_model.safetensors", size: 4 * LIMIT }));
      const chunk = Buffer.alloc(256 * 1024);
      const pump = (): void => {
        while (written < 4 * LIMIT) {
          written += chunk.length;
          if (!req.write(chunk)) {
            req.once("drain", pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });
    expect(answer).toBe(413);
    expect(written).toBeLessThan(4 * LIMIT);
    expect(await registry.objects("chunked")).toEqual([]);
  });
});

describe("stalled uploads", () => {
  it("drops an upload that sends nothing for the idle timeout", async () => {
    const started = Date.now();
    const { reply } = await rawExchange(
      `PUT /v1/adapters/${SMOLLM2_KEY}/stalled HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${registry.keys.acme}\r\n` +
        "content-length: 100000\r\n\r\n",
      (socket) => socket.write(Buffer.alloc(1000)),
    );
    expect(reply).toMatch(/^HTTP\/1\.1 408 /);
    expect(reply).toContain('"upload_timeout"');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(await registry.objects("stalled")).toEqual([]);
  });
});

describe("after all of that", () => {
  it("is still serving", async () => {
    expect(await call(registry, "GET", "/healthz")).toMatchObject({
      status: 200,
      body: { status: "serving" },
    });
    expect((await upload(registry, "survivor", await adapterArchive())).status).toBe(201);
  });
});
