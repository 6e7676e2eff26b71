import { copyFile, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { minilmDir, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureModel, ModelSourceError, readSafetensorsHeader } from "../src/index.js";
import { minilmEntry, rejectionOf } from "./fixtures.js";

let work: string;

beforeEach(async () => {
  work = await tempDir("model-sources-dir");
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

function dirEntry(dir: string) {
  return minilmEntry({ kind: "dir", path: dir }, dir);
}

async function copyOf(files: readonly string[]): Promise<string> {
  const dir = join(work, "model");
  await mkdir(dir);
  for (const file of files) await copyFile(join(minilmDir(), file), join(dir, file));
  return dir;
}

describe("dir source", () => {
  it("returns the real MiniLM directory without writing to it", async () => {
    const dir = minilmDir();
    const before = (await readdir(dir, { recursive: true })).sort();
    expect(await ensureModel(dirEntry(dir))).toBe(dir);
    expect((await readdir(dir, { recursive: true })).sort()).toEqual(before);
  });

  it("fails naming the missing file", async () => {
    const dir = await copyOf(["config.json", "model.safetensors"]);
    const error = await rejectionOf(ensureModel(dirEntry(dir)));
    expect(error).toBeInstanceOf(ModelSourceError);
    expect((error as ModelSourceError).reason).toBe("not-found");
    expect((error as ModelSourceError).file).toBe("tokenizer.json");
    expect((error as ModelSourceError).message).toContain(join(dir, "tokenizer.json"));
    expect(await readdir(dir)).toEqual(["config.json", "model.safetensors"]);
  });

  it.each([
    ["an empty tokenizer.json", "tokenizer.json", "", "invalid-file"],
    ["a config.json that is not JSON", "config.json", "{ model_type: bert", "invalid-file"],
    ["weights that are a pickle", "model.safetensors", "\x80\x02}q\x00.", "invalid-weights"],
  ] as const)("rejects %s", async (_name, file, content, reason) => {
    const dir = await copyOf(["config.json", "tokenizer.json", "model.safetensors"]);
    await writeFile(join(dir, file), content, "latin1");
    const error = await rejectionOf(ensureModel(dirEntry(dir)));
    expect((error as ModelSourceError).reason).toBe(reason);
    expect((error as ModelSourceError).file).toBe(file);
  });
});

describe("readSafetensorsHeader on the real MiniLM weights", () => {
  it("lists the BERT tensors with their dtypes and shapes", async () => {
    const header = await readSafetensorsHeader(join(minilmDir(), "model.safetensors"));
    expect(header.metadata).toEqual({ format: "pt" });
    expect(header.tensors.length).toBe(104);
    const embeddings = header.tensors.find((t) => t.name === "embeddings.word_embeddings.weight");
    expect(embeddings).toMatchObject({ dtype: "F32", shape: [30522, 384] });
  });
});
