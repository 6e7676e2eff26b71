import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { minilmDir, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureModel, MARKER_FILE, MODEL_FILES, ModelSourceError } from "../src/index.js";
import { listFiles, minilmEntry, rejectionOf, sha256File } from "./fixtures.js";
import { startModelServer, type ModelServer } from "./model-server.js";

const TOKEN = "hf_test_0123456789abcdef";
const REPO = "sentence-transformers/all-MiniLM-L6-v2";

let modelsDir: string;
let servers: ModelServer[] = [];

beforeEach(async () => {
  modelsDir = await tempDir("model-sources-hub");
});

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
  await rm(modelsDir, { recursive: true, force: true });
});

/**
 * A hub look-alike: `/<repo>/resolve/<revision>/<file>` behind a bearer token, answering with a
 * 302 to its CDN, by default `/cdn/` on the same server.
 */
async function startHub(revision: string, redirectTo = "/cdn"): Promise<ModelServer> {
  const server = await startModelServer({
    root: minilmDir(),
    prefix: `/${REPO}/resolve/${revision}`,
    redirectTo,
    cdn: true,
    token: TOKEN,
  });
  servers.push(server);
  return server;
}

function hubEntry(revision: string) {
  return minilmEntry({ kind: "hub", repo: REPO, revision }, join(modelsDir, "all-minilm-l6-v2"));
}

describe("hub source via HF_ENDPOINT", () => {
  it("fetches through resolve/<revision>/ with the token, following the CDN redirect", async () => {
    const hub = await startHub("main");
    const entry = hubEntry("main");

    const dir = await ensureModel(entry, { env: { HF_ENDPOINT: `${hub.url}/`, HF_TOKEN: TOKEN } });

    expect(await listFiles(dir)).toEqual([...MODEL_FILES, MARKER_FILE].sort());
    for (const file of MODEL_FILES) {
      expect(hub.count(`/${REPO}/resolve/main/${file}`), file).toBe(1);
      expect(hub.count(`/cdn/${file}`), file).toBe(1);
      expect(await sha256File(join(dir, file)), file).toBe(
        await sha256File(join(minilmDir(), file)),
      );
    }
    const resolves = hub.requests.filter((request) => request.path.includes("/resolve/"));
    expect(resolves.every((request) => request.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("does not carry the token to a CDN on another origin", async () => {
    const cdn = await startModelServer({ root: minilmDir(), prefix: "/cdn" });
    servers.push(cdn);
    const hub = await startHub("main", `${cdn.url}/cdn`);

    await ensureModel(hubEntry("main"), { env: { HF_ENDPOINT: hub.url, HF_TOKEN: TOKEN } });

    expect(cdn.requests.map((request) => request.path).sort()).toEqual(
      MODEL_FILES.map((file) => `/cdn/${file}`).sort(),
    );
    expect(cdn.requests.every((request) => request.authorization === undefined)).toBe(true);
    expect(hub.requests.every((request) => request.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("sends a revision with slashes as one path segment", async () => {
    const hub = await startHub("refs/pr/1");
    const entry = hubEntry("refs/pr/1");
    await ensureModel(entry, { env: { HF_ENDPOINT: hub.url, HF_TOKEN: TOKEN } });
    const raw = hub.requests.map((request) => request.rawPath);
    expect(raw).toContain(`/${REPO}/resolve/refs%2Fpr%2F1/config.json`);
    expect(raw).toContain(`/${REPO}/resolve/refs%2Fpr%2F1/1_Pooling/config.json`);
  });

  it("fails as unauthorized without leaking the token when the hub refuses it", async () => {
    const hub = await startHub("main");
    const wrong = "hf_wrong_token_value";
    const error = await rejectionOf(
      ensureModel(hubEntry("main"), { env: { HF_ENDPOINT: hub.url, HF_TOKEN: wrong } }),
    );
    expect(error).toBeInstanceOf(ModelSourceError);
    const failure = error as ModelSourceError;
    expect(failure.reason).toBe("unauthorized");
    expect(failure.file).toBe("config.json");
    expect(failure.message).toContain(`${hub.url}/${REPO}/resolve/main/config.json`);
    expect(failure.message).toContain("HF_TOKEN");
    expect(failure.message).not.toContain(wrong);
    expect(JSON.stringify(failure)).not.toContain(wrong);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("sends no Authorization header when HF_TOKEN is unset", async () => {
    const hub = await startHub("main");
    const error = await rejectionOf(
      ensureModel(hubEntry("main"), { env: { HF_ENDPOINT: hub.url } }),
    );
    expect((error as ModelSourceError).reason).toBe("unauthorized");
    expect(hub.requests.map((request) => request.authorization)).toEqual([undefined]);
  });
});
