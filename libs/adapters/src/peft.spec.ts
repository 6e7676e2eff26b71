import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { encodeSafetensors, type SafetensorsInput } from "@shoal/model-sources";
import { repoRoot, SMOLLM2_SHAPE } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { readBaseShape, type BaseShape } from "./base-shape.js";
import { loraTensorName } from "./lora-modules.js";
import { InvalidAdapterError, validateLoraAdapter, type AdapterFiles } from "./peft.js";
import {
  encodeFloats,
  makeLoraAdapter,
  type SyntheticAdapterOptions,
} from "./synthetic-adapter.js";

const SMOLLM2: BaseShape = SMOLLM2_SHAPE;

const validate = (files: AdapterFiles, maxRank?: number) =>
  validateLoraAdapter(files, SMOLLM2, maxRank === undefined ? {} : { maxRank });

function refusal(options: SyntheticAdapterOptions, maxRank?: number): string {
  try {
    validate(makeLoraAdapter(SMOLLM2, options), maxRank);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidAdapterError);
    return (error as Error).message;
  }
  throw new Error("the adapter was accepted");
}

const Q_A0 = loraTensorName(0, "q_proj", "A");

describe("validateLoraAdapter accepts", () => {
  it("PEFT's default Llama adapter (q_proj, v_proj on every layer)", () => {
    expect(validate(makeLoraAdapter(SMOLLM2))).toEqual({
      rank: 8,
      alpha: 16,
      rslora: false,
      targetModules: ["q_proj", "v_proj"],
      dtype: "F32",
      // q: 8·576 + 576·8, v: 8·576 + 192·8, on 30 layers.
      parameters: 30 * (8 * 576 + 576 * 8 + 8 * 576 + 192 * 8),
      layers: Array.from({ length: 30 }, (_, i) => i),
    });
  });

  it.each(["F32", "F16", "BF16"] as const)("every projection, stored as %s", (dtype) => {
    const all = [
      "down_proj",
      "up_proj",
      "gate_proj",
      "o_proj",
      "v_proj",
      "k_proj",
      "q_proj",
    ] as const;
    const summary = validate(makeLoraAdapter(SMOLLM2, { dtype, rank: 4, targetModules: all }));
    expect(summary.targetModules).toEqual([
      "q_proj",
      "k_proj",
      "v_proj",
      "o_proj",
      "gate_proj",
      "up_proj",
      "down_proj",
    ]);
    expect(summary.dtype).toBe(dtype);
    expect(summary.parameters).toBe(30 * 4 * (1152 + 768 + 768 + 1152 + 2112 + 2112 + 2112));
  });

  it("some layers, rsLoRA, a rank at the limit, and unset optional keys", () => {
    const summary = validate(
      makeLoraAdapter(SMOLLM2, {
        rank: 16,
        layers: [29, 3],
        config: { use_rslora: true, task_type: undefined, bias: undefined, lora_dropout: 0.1 },
      }),
      16,
    );
    expect(summary).toMatchObject({ rank: 16, rslora: true, layers: [3, 29] });
  });

  it("a single layer index, as PEFT allows", () => {
    const files = makeLoraAdapter(SMOLLM2, { layers: [7], config: { layers_to_transform: 7 } });
    expect(validate(files).layers).toEqual([7]);
  });
});

describe("validateLoraAdapter on what PEFT itself writes", () => {
  it("accepts tools/reference's PEFT 0.21 adapter for its tiny Llama", async () => {
    const dir = join(repoRoot(), "tools", "reference", "fixtures", "tiny", "lora");
    const shape = await readBaseShape(join(dir, "base"), "safetensors");
    expect(shape).toEqual({
      layers: 2,
      hiddenSize: 64,
      intermediateSize: 128,
      heads: 4,
      kvHeads: 2,
      headDim: 16,
    });
    const files = {
      config: await readFile(join(dir, "adapter", "adapter_config.json")),
      weights: await readFile(join(dir, "adapter", "adapter_model.safetensors")),
    };
    expect(validateLoraAdapter(files, shape, { maxRank: 4 })).toEqual({
      rank: 4,
      alpha: 8,
      rslora: false,
      targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
      dtype: "F32",
      parameters: 4 * (64 + 64 + 64 + 32 + 64 + 32 + 64 + 64 + 64 + 128 + 64 + 128 + 128 + 64),
      layers: [1],
    });
    // The same adapter is wrong for a base one layer shorter.
    expect(() => validateLoraAdapter(files, { ...shape, layers: 1 })).toThrow(
      "layers_to_transform holds 1; the base model has layers 0 to 0",
    );
  });
});

describe("validateLoraAdapter refuses adapter_config.json with", () => {
  it.each<[string, Readonly<Record<string, unknown>>, string]>([
    ["another PEFT type", { peft_type: "IA3" }, 'peft_type must be "LORA", found "IA3"'],
    ["no PEFT type", { peft_type: undefined }, 'peft_type must be "LORA", found null'],
    [
      "another task",
      { task_type: "SEQ_CLS" },
      'task_type must be "CAUSAL_LM" (or unset), found "SEQ_CLS"',
    ],
    ["no rank", { r: undefined }, "r must be an integer from 1 to 64, found null"],
    ["a rank of 0", { r: 0 }, "r must be an integer from 1 to 64, found 0"],
    ["a fractional rank", { r: 8.5 }, "found 8.5"],
    ["a rank as a string", { r: "8" }, 'found "8"'],
    ["alpha 0", { lora_alpha: 0 }, "lora_alpha must be a number greater than 0, found 0"],
    ["a negative alpha", { lora_alpha: -16 }, "found -16"],
    ["no alpha", { lora_alpha: undefined }, "found null"],
    [
      "a regex for target modules",
      { target_modules: ".*proj" },
      'the string form ".*proj" (a regex or "all-linear")',
    ],
    ["all-linear", { target_modules: "all-linear" }, 'the string form "all-linear"'],
    ["no target modules", { target_modules: [] }, "target_modules must be a non-empty list"],
    [
      "an unknown module",
      { target_modules: ["q_proj", "lm_head"] },
      'target_modules holds "lm_head", which is not one of q_proj',
    ],
    [
      "a module listed twice",
      { target_modules: ["q_proj", "q_proj"] },
      "target_modules lists q_proj twice",
    ],
    ["trained biases", { bias: "all" }, 'bias must be "none"'],
    ["DoRA", { use_dora: true }, "use_dora must be false: DoRA adapters are not supported"],
    ["fan_in_fan_out", { fan_in_fan_out: true }, "fan_in_fan_out must be false"],
    ["LoRA biases", { lora_bias: true }, "lora_bias must be false"],
    ["modules to save", { modules_to_save: ["lm_head"] }, "modules_to_save must be unset or empty"],
    [
      "a rank pattern",
      { rank_pattern: { q_proj: 4 } },
      "rank_pattern must be unset or empty: every module must use r",
    ],
    ["an alpha pattern", { alpha_pattern: { q_proj: 4 } }, "alpha_pattern must be unset or empty"],
    [
      "layer replication",
      { layer_replication: [[0, 4]] },
      "layer_replication must be unset or empty",
    ],
    ["excluded modules", { exclude_modules: ["v_proj"] }, "exclude_modules must be unset or empty"],
    ["target parameters", { target_parameters: ["x"] }, "target_parameters must be unset or empty"],
    [
      "trainable tokens",
      { trainable_token_indices: [1, 2] },
      "trainable_token_indices must be unset or empty",
    ],
    ["QA-LoRA", { use_qalora: true }, "use_qalora must be false"],
    [
      "activated LoRA",
      { alora_invocation_tokens: [42] },
      "alora_invocation_tokens must be unset or empty",
    ],
    ["rsLoRA as a string", { use_rslora: "yes" }, 'use_rslora must be true or false, found "yes"'],
    [
      "a layer past the last",
      { layers_to_transform: [0, 30] },
      "layers_to_transform holds 30; the base model has layers 0 to 29",
    ],
    ["a negative layer", { layers_to_transform: -1 }, "layers_to_transform holds -1"],
    [
      "a layer listed twice",
      { layers_to_transform: [2, 2] },
      "layers_to_transform lists layer 2 twice",
    ],
    [
      "an empty layer list",
      { layers_to_transform: [] },
      "layers_to_transform must not be an empty list",
    ],
  ])("%s", (_, config, message) => {
    const refused = refusal({ config });
    expect(refused.startsWith("adapter_config.json: ")).toBe(true);
    expect(refused).toContain(message);
  });

  it("a rank over the configured limit", () => {
    expect(refusal({ rank: 16 }, 8)).toBe(
      "adapter_config.json: r must be an integer from 1 to 8, found 16",
    );
  });

  it.each<[string, Buffer, string]>([
    ["bad JSON", Buffer.from('{"peft_type": "LORA",'), "adapter_config.json is not valid JSON ("],
    ["a JSON array", Buffer.from("[]"), "adapter_config.json is not a JSON object"],
    ["bytes that are not UTF-8", Buffer.from([0x7b, 0xff, 0x7d]), "(not UTF-8)"],
    ["a huge file", Buffer.alloc(2 * 1024 * 1024, 0x20), "a PEFT config is a few KiB"],
  ])("%s", (_, config, message) => {
    const files = { ...makeLoraAdapter(SMOLLM2), config };
    expect(() => validate(files)).toThrow(message);
  });
});

describe("validateLoraAdapter refuses adapter_model.safetensors with", () => {
  const replace =
    (name: string, change: Partial<SafetensorsInput>) => (tensors: SafetensorsInput[]) =>
      tensors.map((t) => (t.name === name ? { ...t, ...change } : t));

  it.each<[string, SyntheticAdapterOptions, string]>([
    [
      "an extra tensor",
      {
        tensors: (t) => [
          ...t,
          {
            name: "base_model.model.lm_head.weight",
            dtype: "F32",
            shape: [1],
            data: new Uint8Array(4),
          },
        ],
      },
      "1 tensor(s) the config does not call for, e.g. base_model.model.lm_head.weight (the config adapts q_proj, v_proj on layers 0 to 29)",
    ],
    [
      "a module the config does not list",
      {
        targetModules: ["q_proj", "v_proj", "k_proj"],
        config: { target_modules: ["q_proj", "v_proj"] },
      },
      "60 tensor(s) the config does not call for, e.g. base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight",
    ],
    [
      "a layer the config does not list",
      { config: { layers_to_transform: [0, 1] } },
      "112 tensor(s) the config does not call for, e.g. base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight (the config adapts q_proj, v_proj on layers 0 to 1)",
    ],
    [
      "a missing lora_B",
      { tensors: (t) => t.filter((x) => x.name !== loraTensorName(5, "v_proj", "B")) },
      "1 tensor(s) the config calls for are missing, e.g. base_model.model.model.layers.5.self_attn.v_proj.lora_B.weight",
    ],
    [
      "PEFT's adapter name left in the tensor names",
      {
        tensors: (t) =>
          t.map((x) => ({ ...x, name: x.name.replace(".weight", ".default.weight") })),
      },
      "120 tensor(s) the config does not call for, e.g. base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight",
    ],
    [
      "lora_A as wide as a k projection (a base without grouped-query attention)",
      {
        tensors: replace(loraTensorName(0, "v_proj", "B"), {
          shape: [576, 8],
          data: new Uint8Array(576 * 8 * 4),
        }),
      },
      `${loraTensorName(0, "v_proj", "B")} has shape [576,8], expected [192, 8]`,
    ],
    [
      "a transposed lora_A",
      { tensors: replace(Q_A0, { shape: [576, 8] }) },
      `${Q_A0} has shape [576,8], expected [8, 576]`,
    ],
    [
      "a rank that disagrees with r",
      { rank: 4, config: { r: 8 } },
      `${Q_A0} has shape [4,576], expected [8, 576]`,
    ],
    [
      "a 3-d tensor",
      { tensors: replace(Q_A0, { shape: [8, 576, 1] }) },
      `${Q_A0} has shape [8,576,1], expected [8, 576]`,
    ],
    [
      "mixed dtypes",
      {
        tensors: (t) =>
          t.map((x, i) =>
            i === 3 ? { ...x, dtype: "F16", data: x.data.subarray(0, x.data.length / 2) } : x,
          ),
      },
      "all tensors must share one dtype: base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight is F16, others F32",
    ],
    [
      "integer weights",
      { tensors: (t) => t.map((x) => ({ ...x, dtype: "I32" })) },
      "tensors must be F32, F16, BF16, found I32",
    ],
    [
      "a NaN",
      {
        tensors: replace(Q_A0, {
          data: encodeFloats(new Float32Array(8 * 576).fill(NaN, 100, 101), "F32"),
        }),
      },
      `${Q_A0} holds a NaN or infinite value (element 100)`,
    ],
    [
      "an infinity in f16",
      {
        dtype: "F16",
        tensors: replace(Q_A0, {
          data: encodeFloats(new Float32Array(8 * 576).fill(1e6, 7, 8), "F16"),
        }),
      },
      `${Q_A0} holds a NaN or infinite value (element 7)`,
    ],
    [
      "a NaN in bf16",
      {
        dtype: "BF16",
        tensors: replace(Q_A0, {
          data: encodeFloats(new Float32Array(8 * 576).fill(NaN, 4607), "BF16"),
        }),
      },
      `${Q_A0} holds a NaN or infinite value (element 4607)`,
    ],
  ])("%s", (_, options, message) => {
    const refused = refusal(options);
    expect(refused.startsWith("adapter_model.safetensors: ")).toBe(true);
    expect(refused).toContain(message);
  });

  it.each<[string, Uint8Array, string]>([
    ["nothing", Buffer.alloc(0), "not a valid safetensors file (file is 0 bytes, shorter than 8)"],
    [
      "a pickle",
      Buffer.from([0x80, 0x02, 0x7d, 0x71, 0x00, 0x28, 0x58, 0x01, 0x00, 0x00]),
      "not a valid safetensors file (header length",
    ],
    [
      "a truncated file",
      makeLoraAdapter(SMOLLM2).weights.subarray(0, 100_000),
      "not a valid safetensors file (tensor base_model",
    ],
    ["no tensors", encodeSafetensors([]), "not a valid safetensors file (header lists no tensors)"],
  ])("%s", (_, weights, message) => {
    expect(() => validate({ ...makeLoraAdapter(SMOLLM2), weights })).toThrow(
      `adapter_model.safetensors: ${message}`,
    );
  });
});

describe("makeLoraAdapter", () => {
  it("writes the same bytes for the same seed and different ones for another", () => {
    const one = makeLoraAdapter(SMOLLM2, { seed: 7 });
    expect(makeLoraAdapter(SMOLLM2, { seed: 7 }).weights.equals(one.weights)).toBe(true);
    expect(makeLoraAdapter(SMOLLM2, { seed: 8 }).weights.equals(one.weights)).toBe(false);
  });
});
