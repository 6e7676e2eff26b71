import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SMOLLM2_SHAPE, smollm2Dir, tempDir } from "@shoal/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { ggufHeader, llamaEntries, type GgufEntry } from "../test/gguf-builder.js";
import {
  InvalidBaseModelError,
  readBaseShape,
  shapeFromTransformersConfig,
  type BaseShape,
} from "./base-shape.js";

let root: string;
let n = 0;

beforeAll(async () => {
  root = await tempDir("base-shape");
});

async function ggufDir(entries: readonly GgufEntry[]): Promise<string> {
  const dir = join(root, String(n++));
  await mkdir(dir);
  await writeFile(join(dir, "model.gguf"), ggufHeader(entries));
  return dir;
}

async function configDir(config: unknown): Promise<string> {
  const dir = join(root, String(n++));
  await mkdir(dir);
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
  return dir;
}

const TINY: BaseShape = {
  layers: 4,
  hiddenSize: 64,
  intermediateSize: 128,
  heads: 8,
  kvHeads: 2,
  headDim: 8,
};

/** SmolLM2-135M's transformers config.json, as the hub ships it (abridged). */
const SMOLLM2_CONFIG = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 576,
  intermediate_size: 1536,
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  rms_norm_eps: 1e-5,
  vocab_size: 49152,
};

describe("readBaseShape", () => {
  it("reads the real SmolLM2-135M-Instruct GGUF", async () => {
    expect(await readBaseShape(smollm2Dir(), "gguf")).toEqual(SMOLLM2_SHAPE);
  });

  it("reads the same shape from SmolLM2's transformers config.json", async () => {
    expect(await readBaseShape(await configDir(SMOLLM2_CONFIG), "safetensors")).toEqual(
      SMOLLM2_SHAPE,
    );
  });

  it("defaults kv heads to heads, and takes an explicit head width", async () => {
    const dir = await ggufDir(
      llamaEntries({
        "llama.attention.head_count_kv": null,
        "llama.attention.key_length": { key: "llama.attention.key_length", u32: 16 },
      }),
    );
    expect(await readBaseShape(dir, "gguf")).toEqual({ ...TINY, kvHeads: 8, headDim: 16 });
    expect(
      shapeFromTransformersConfig({ ...SMOLLM2_CONFIG, num_key_value_heads: null, head_dim: 32 }),
    ).toEqual({
      ...SMOLLM2_SHAPE,
      kvHeads: 9,
      headDim: 32,
    });
  });

  it.each<[string, Readonly<Record<string, GgufEntry | null>>, string]>([
    [
      "another architecture",
      { "general.architecture": { key: "general.architecture", string: "qwen2" } },
      '"qwen2"',
    ],
    ["no architecture", { "general.architecture": null }, "found none"],
    ["a missing block count", { "llama.block_count": null }, "llama.block_count is missing"],
    [
      "a string where a count belongs",
      { "llama.block_count": { key: "llama.block_count", string: "4" } },
      "not an integer",
    ],
    [
      "zero heads",
      { "llama.attention.head_count": { key: "llama.attention.head_count", u32: 0 } },
      "implausible",
    ],
    [
      "heads that do not group",
      { "llama.attention.head_count_kv": { key: "llama.attention.head_count_kv", u32: 3 } },
      "do not group",
    ],
  ])("refuses GGUF metadata with %s", async (_, overrides, message) => {
    const dir = await ggufDir(llamaEntries(overrides));
    await expect(readBaseShape(dir, "gguf")).rejects.toThrow(InvalidBaseModelError);
    await expect(readBaseShape(dir, "gguf")).rejects.toThrow(message);
  });

  it("refuses a broken GGUF file and a missing one, naming the path", async () => {
    const dir = await ggufDir([]);
    await writeFile(join(dir, "model.gguf"), "<html>not found</html>");
    await expect(readBaseShape(dir, "gguf")).rejects.toThrow(/model\.gguf: not a GGUF file/);
    await expect(readBaseShape(join(root, "absent"), "gguf")).rejects.toThrow(
      InvalidBaseModelError,
    );
  });

  it.each<[string, unknown, string]>([
    ["a BERT config", { ...SMOLLM2_CONFIG, model_type: "bert" }, '"bert"'],
    ["an array", [SMOLLM2_CONFIG], "not a JSON object"],
    [
      "a missing layer count",
      { ...SMOLLM2_CONFIG, num_hidden_layers: undefined },
      "num_hidden_layers is missing",
    ],
    [
      "a fractional width",
      { ...SMOLLM2_CONFIG, hidden_size: 576.5 },
      "hidden_size is not an integer",
    ],
    ["a width the heads do not split", { ...SMOLLM2_CONFIG, hidden_size: 577 }, "does not split"],
  ])("refuses a config.json with %s", async (_, config, message) => {
    await expect(readBaseShape(await configDir(config), "safetensors")).rejects.toThrow(message);
  });

  it("refuses a config.json that is not JSON", async () => {
    const dir = await configDir({});
    await writeFile(join(dir, "config.json"), "{ model_type: llama }");
    await expect(readBaseShape(dir, "safetensors")).rejects.toThrow(InvalidBaseModelError);
  });
});
