import { spawnSync } from "node:child_process";
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { createLogger } from "@shoal/telemetry";
import { minilmDir, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ensureModel,
  MARKER_FILE,
  MODEL_FILES,
  OPTIONAL_FILES,
  REQUIRED_FILES,
  type ModelMarker,
  type ModelProgressEvent,
} from "../src/index.js";
import { listFiles, minilmEntry, safetensorsBytes, sha256File, expectFailure } from "./fixtures.js";
import { startModelServer, type ModelServer, type ModelServerOptions } from "./model-server.js";

const source = minilmDir();
let modelsDir: string;
let servers: ModelServer[] = [];

beforeEach(async () => {
  modelsDir = await tempDir("model-sources");
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
  await rm(modelsDir, { recursive: true, force: true });
});

async function serve(options: Partial<ModelServerOptions> = {}): Promise<ModelServer> {
  const server = await startModelServer({ root: source, ...options });
  servers.push(server);
  return server;
}

function urlEntry(server: ModelServer, key = "all-minilm-l6-v2") {
  return minilmEntry({ kind: "url", baseUrl: `${server.url}/` }, join(modelsDir, key));
}

/** A failed fetch leaves nothing in the models dir: no target, no staging directory. */
async function expectNothingLeft(): Promise<void> {
  expect(await readdir(modelsDir)).toEqual([]);
}

describe("url source against a real HTTP server", () => {
  it("fetches every file, byte-identical, with a marker, and nothing else", async () => {
    const server = await serve();
    const events: ModelProgressEvent[] = [];
    const entry = urlEntry(server);

    const dir = await ensureModel(entry, { onProgress: (event) => events.push(event) });

    expect(dir).toBe(entry.dir);
    expect(await readdir(modelsDir)).toEqual(["all-minilm-l6-v2"]);
    expect(await listFiles(dir)).toEqual([...MODEL_FILES, MARKER_FILE].sort());
    const marker = JSON.parse(await readFile(join(dir, MARKER_FILE), "utf8")) as ModelMarker;
    expect(marker.modelId).toBe(entry.id);
    expect(marker.source).toEqual(entry.source);
    expect(marker.files.map((file) => file.name)).toEqual([...MODEL_FILES]);
    for (const file of marker.files) {
      const expected = await sha256File(join(source, file.name));
      expect(await sha256File(join(dir, file.name)), file.name).toBe(expected);
      expect(file.sha256, file.name).toBe(expected);
      expect(file.size, file.name).toBe((await stat(join(source, file.name))).size);
    }
    const weights = events.filter((event) => event.file === "model.safetensors");
    const size = (await stat(join(source, "model.safetensors"))).size;
    expect(weights[0]).toMatchObject({ bytesDone: 0, bytesTotal: size, modelId: entry.id });
    expect(weights.at(-1)).toMatchObject({ bytesDone: size, bytesTotal: size });
    expect(weights.length).toBeGreaterThan(10);
  });

  it("is fine when the optional files are missing", async () => {
    const server = await serve({ hide: OPTIONAL_FILES });
    const dir = await ensureModel(urlEntry(server));
    expect(await listFiles(dir)).toEqual([...REQUIRED_FILES, MARKER_FILE].sort());
    for (const file of OPTIONAL_FILES) expect(server.count(`/${file}`)).toBe(1);
  });

  it("fails naming the model, file and URL when a required file is missing", async () => {
    const server = await serve({ hide: ["tokenizer.json"] });
    const error = await expectFailure(ensureModel(urlEntry(server)), "not-found");
    expect(error.file).toBe("tokenizer.json");
    expect(error.message).toContain("sentence-transformers/all-MiniLM-L6-v2");
    expect(error.message).toContain("tokenizer.json");
    expect(error.message).toContain(`${server.url}/tokenizer.json`);
    await expectNothingLeft();
  });

  it("rejects a body that ends before its Content-Length", async () => {
    const server = await serve({
      handlers: {
        "config.json": (_req, res, path) => {
          void readFile(path).then((bytes) => {
            res.writeHead(200, { "content-length": bytes.length + 100 });
            res.write(bytes, () => res.socket?.destroy());
          });
        },
      },
    });
    const error = await expectFailure(ensureModel(urlEntry(server)), "transfer");
    expect(error.file).toBe("config.json");
    await expectNothingLeft();
  });

  it("rejects a file cut short by a Content-Length smaller than the body", async () => {
    const server = await serve({
      handlers: {
        "config.json": (_req, res, path) => {
          void readFile(path).then((bytes) => {
            // The client stops at the declared length, so it sees valid-looking but truncated
            // JSON; validation, not the transfer, must catch it.
            res.writeHead(200, { "content-length": 100, connection: "close" });
            res.flushHeaders();
            res.socket?.end(bytes);
          });
        },
      },
    });
    const error = await expectFailure(ensureModel(urlEntry(server)), "invalid-file");
    expect(error.file).toBe("config.json");
    await expectNothingLeft();
  });

  it("refuses a Content-Length over maxFileBytes before reading the body", async () => {
    const server = await serve();
    const error = await expectFailure(
      ensureModel(urlEntry(server), { maxFileBytes: 1_000_000 }),
      "too-large",
    );
    expect(error.file).toBe("model.safetensors");
    expect(error.message).toContain("Content-Length");
    await expectNothingLeft();
  });

  it("stops a chunked body once it passes maxFileBytes", async () => {
    const server = await serve({
      handlers: {
        "model.safetensors": (_req, res) => {
          // No Content-Length: node sends it chunked, so only the streaming check can stop it.
          res.writeHead(200);
          const chunk = Buffer.alloc(64 * 1024);
          const pump = (): void => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once("drain", pump);
          };
          res.on("close", () => res.removeAllListeners("drain"));
          pump();
        },
      },
    });
    const error = await expectFailure(
      ensureModel(urlEntry(server), { maxFileBytes: 2_000_000 }),
      "too-large",
    );
    expect(error.file).toBe("model.safetensors");
    expect(error.message).toContain("after");
    await expectNothingLeft();
  });

  it("removes the staging dir when the server dies mid-body", async () => {
    const server = await serve({
      handlers: {
        "model.safetensors": (_req, res, path) => {
          void stat(path).then((info) => {
            res.writeHead(200, { "content-length": info.size });
            res.write(Buffer.alloc(5_000_000), () => res.socket?.destroy());
          });
        },
      },
    });
    const error = await expectFailure(ensureModel(urlEntry(server)), "transfer");
    expect(error.file).toBe("model.safetensors");
    expect(error.message).toMatch(/body failed after \d+ bytes/);
    await expectNothingLeft();
  });

  const dataBytes = 16;
  const tensor = { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] };
  const hugeLength = Buffer.alloc(64);
  hugeLength.writeBigUInt64LE(2n ** 62n);
  it.each([
    [
      "a garbage header",
      Buffer.concat([Buffer.from([20, 0, 0, 0, 0, 0, 0, 0]), Buffer.alloc(40, 0xff)]),
    ],
    ["a huge header length", hugeLength],
    [
      "offsets beyond the file",
      safetensorsBytes({ w: { ...tensor, data_offsets: [0, 1600] }, x: tensor }, dataBytes),
    ],
    ["an HTML error page", Buffer.from("<html><body>Service Unavailable</body></html>")],
  ])("rejects weights with %s", async (_name, bytes) => {
    const server = await serve({
      handlers: {
        "model.safetensors": (_req, res) => {
          res.writeHead(200, { "content-length": bytes.length }).end(bytes);
        },
      },
    });
    const error = await expectFailure(ensureModel(urlEntry(server)), "invalid-weights");
    expect(error.file).toBe("model.safetensors");
    await expectNothingLeft();
  });

  it("requests each file once for concurrent calls, and nothing once complete", async () => {
    const server = await serve();
    const entry = urlEntry(server);

    const [a, b] = await Promise.all([ensureModel(entry), ensureModel(entry)]);

    expect(a).toBe(entry.dir);
    expect(b).toBe(entry.dir);
    for (const file of MODEL_FILES) expect(server.count(`/${file}`), file).toBe(1);
    const seen = server.requests.length;
    expect(seen).toBe(MODEL_FILES.length);

    await ensureModel(entry);
    expect(server.requests.length).toBe(seen);
  });

  it("replaces a directory that has no marker", async () => {
    const server = await serve();
    const entry = urlEntry(server);
    await mkdir(join(entry.dir, "1_Pooling"), { recursive: true });
    await writeFile(join(entry.dir, "config.json"), "{}");
    await writeFile(join(entry.dir, "model.safetensors"), "half a download");
    const lines: string[] = [];
    const logger = createLogger({
      service: "test",
      level: "debug",
      destination: { write: (line: string) => lines.push(line) },
    });

    await ensureModel(entry, { logger });

    expect(await listFiles(entry.dir)).toEqual([...MODEL_FILES, MARKER_FILE].sort());
    expect(await sha256File(join(entry.dir, "model.safetensors"))).toBe(
      await sha256File(join(source, "model.safetensors")),
    );
    expect(await readdir(modelsDir)).toEqual(["all-minilm-l6-v2"]);
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 40, model: entry.id, dir: entry.dir }),
    );
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: "model ready", model: entry.id, outcome: "renamed" }),
    );
  });

  it("refetches when a file no longer matches its marker or the source changed", async () => {
    const server = await serve();
    const entry = urlEntry(server);
    await ensureModel(entry);
    await writeFile(join(entry.dir, "tokenizer.json"), "{}");
    const before = server.requests.length;

    await ensureModel(entry);
    expect(server.requests.length).toBe(before + MODEL_FILES.length);
    expect(await sha256File(join(entry.dir, "tokenizer.json"))).toBe(
      await sha256File(join(source, "tokenizer.json")),
    );

    const moved = minilmEntry({ kind: "url", baseUrl: `${server.url}/./` }, entry.dir);
    await ensureModel(moved);
    expect(server.requests.length).toBe(before + 2 * MODEL_FILES.length);
    const marker = JSON.parse(await readFile(join(entry.dir, MARKER_FILE), "utf8")) as ModelMarker;
    expect(marker.source).toEqual(moved.source);
  });

  it("removes staging dirs of dead processes on this host and keeps live ones", async () => {
    const server = await serve();
    const entry = urlEntry(server);
    const host = hostname()
      .replace(/[^A-Za-z0-9-]/g, "_")
      .slice(0, 32);
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    const deadStaging = join(modelsDir, `.all-minilm-l6-v2.tmp-${host}-${dead}-abc123`);
    const liveStaging = join(modelsDir, `.all-minilm-l6-v2.tmp-${host}-${process.ppid}-def456`);
    await mkdir(deadStaging);
    await writeFile(join(deadStaging, "model.safetensors"), "partial");
    await mkdir(liveStaging);

    await ensureModel(entry);

    expect((await readdir(modelsDir)).sort()).toEqual(
      [".all-minilm-l6-v2.tmp-" + `${host}-${process.ppid}-def456`, "all-minilm-l6-v2"].sort(),
    );
  });

  it("keeps a directory another process completed while this one fetched", async () => {
    const server = await serve();
    const otherModels = await tempDir("model-sources-other");
    try {
      const theirs = minilmEntry(
        { kind: "url", baseUrl: `${server.url}/` },
        join(otherModels, "m"),
      );
      await ensureModel(theirs);
      await writeFile(join(theirs.dir, "theirs.txt"), "the other process wrote this");
      const entry = minilmEntry(theirs.source, join(modelsDir, "m"));
      const last = `/${MODEL_FILES.at(-1) ?? ""}`;

      // The other process's rename lands while ours is still downloading its last file.
      const racingFetch: typeof fetch = async (input, init) => {
        const url =
          typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
        if (new URL(url).pathname === last) {
          const side = join(otherModels, "copy");
          await cp(theirs.dir, side, { recursive: true });
          await rename(side, entry.dir);
        }
        return fetch(input, init);
      };
      await ensureModel(entry, { fetch: racingFetch });

      expect(await readFile(join(entry.dir, "theirs.txt"), "utf8")).toBe(
        "the other process wrote this",
      );
      expect(await readdir(modelsDir)).toEqual(["m"]);
    } finally {
      await rm(otherModels, { recursive: true, force: true });
    }
  });

  it("never sends HF_TOKEN to a url source", async () => {
    const server = await serve();
    await ensureModel(urlEntry(server), { env: { HF_TOKEN: "hf_not_for_you" } });
    expect(server.requests.length).toBe(MODEL_FILES.length);
    expect(server.requests.every((request) => request.authorization === undefined)).toBe(true);
  });
});
