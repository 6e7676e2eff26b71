import type { BaseShape } from "./base-shape.js";

/**
 * The Llama projections a LoRA adapter may adapt, and where PEFT puts their weights: a PEFT
 * `save_pretrained` of a `LlamaForCausalLM` names them
 * `base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_{A|B}.weight`
 * (`peft.utils.save_and_load.get_peft_model_state_dict`, adapter name stripped).
 */
export const LORA_TARGET_MODULES = Object.freeze([
  "q_proj",
  "k_proj",
  "v_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "down_proj",
] as const);

export type LoraTargetModule = (typeof LORA_TARGET_MODULES)[number];

/** The dtypes adapter weights may be stored in. */
export const LORA_DTYPES = Object.freeze(["F32", "F16", "BF16"] as const);

export type LoraDtype = (typeof LORA_DTYPES)[number];

/** Whether `value` names a module in {@link LORA_TARGET_MODULES}. */
export function isLoraTargetModule(value: unknown): value is LoraTargetModule {
  return (LORA_TARGET_MODULES as readonly unknown[]).includes(value);
}

/**
 * A projection's input and output widths: `lora_A` is `[r, in]` and `lora_B` is `[out, r]`,
 * as `nn.Linear(in, out)` stores its weight `[out, in]`.
 */
export function loraModuleShape(
  module: LoraTargetModule,
  shape: BaseShape,
): { readonly in: number; readonly out: number } {
  const attention = shape.heads * shape.headDim;
  const kv = shape.kvHeads * shape.headDim;
  switch (module) {
    case "q_proj":
      return { in: shape.hiddenSize, out: attention };
    case "k_proj":
    case "v_proj":
      return { in: shape.hiddenSize, out: kv };
    case "o_proj":
      return { in: attention, out: shape.hiddenSize };
    case "gate_proj":
    case "up_proj":
      return { in: shape.hiddenSize, out: shape.intermediateSize };
    case "down_proj":
      return { in: shape.intermediateSize, out: shape.hiddenSize };
  }
}

/** The tensor name PEFT saves one LoRA matrix of one layer's projection under. */
export function loraTensorName(layer: number, module: LoraTargetModule, matrix: "A" | "B"): string {
  const block =
    module === "gate_proj" || module === "up_proj" || module === "down_proj" ? "mlp" : "self_attn";
  return `base_model.model.model.layers.${layer}.${block}.${module}.lora_${matrix}.weight`;
}
