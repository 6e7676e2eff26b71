import { encodeSafetensors, f32ToF16Bits, type SafetensorsInput } from "@shoal/model-sources";
import type { BaseShape } from "./base-shape.js";
import {
  LORA_TARGET_MODULES,
  loraModuleShape,
  loraTensorName,
  type LoraDtype,
  type LoraTargetModule,
} from "./lora-modules.js";
import type { AdapterFiles } from "./peft.js";

/** What {@link makeLoraAdapter} writes. */
export interface SyntheticAdapterOptions {
  /** @default 8 */
  readonly rank?: number;
  /** @default 16 */
  readonly alpha?: number;
  /** @default ["q_proj", "v_proj"], PEFT's default for Llama */
  readonly targetModules?: readonly LoraTargetModule[];
  /** Written as `layers_to_transform` when set. @default every layer */
  readonly layers?: readonly number[];
  /** @default "F32" */
  readonly dtype?: LoraDtype;
  /** Seeds the weights: one seed, one adapter, byte for byte. @default 1 */
  readonly seed?: number;
  /** Keys laid over the written `adapter_config.json`; `undefined` removes a key. */
  readonly config?: Readonly<Record<string, unknown>>;
  /** Rewrites the tensor list before it is encoded (to break an adapter on purpose). */
  readonly tensors?: (tensors: SafetensorsInput[]) => SafetensorsInput[];
}

/**
 * Writes a PEFT LoRA adapter for a Llama base of `shape` with seeded random weights, in the
 * exact files `save_pretrained` writes (`adapter_config.json`, `adapter_model.safetensors`):
 * for tests and benchmarks that need adapters of a real layout without a training run. `lora_B`
 * is small but non-zero (PEFT initialises it to zero; a trained adapter's is not), so the
 * adapter visibly changes the base model's output.
 */
export function makeLoraAdapter(
  shape: BaseShape,
  options: SyntheticAdapterOptions = {},
): AdapterFiles & { readonly config: Buffer; readonly weights: Buffer } {
  const rank = options.rank ?? 8;
  const targetModules = options.targetModules ?? ["q_proj", "v_proj"];
  const dtype = options.dtype ?? "F32";
  const layers = options.layers ?? Array.from({ length: shape.layers }, (_, i) => i);
  const random = mulberry32(options.seed ?? 1);
  let tensors: SafetensorsInput[] = [];
  for (const layer of layers) {
    for (const module of LORA_TARGET_MODULES.filter((m) => targetModules.includes(m))) {
      const widths = loraModuleShape(module, shape);
      // A as PEFT initialises it (Kaiming-uniform bound 1/√in), B as a short training run leaves it.
      const a = uniform(random, rank * widths.in, 1 / Math.sqrt(widths.in));
      const b = uniform(random, widths.out * rank, 0.01);
      tensors.push(
        {
          name: loraTensorName(layer, module, "A"),
          dtype,
          shape: [rank, widths.in],
          data: encode(a, dtype),
        },
        {
          name: loraTensorName(layer, module, "B"),
          dtype,
          shape: [widths.out, rank],
          data: encode(b, dtype),
        },
      );
    }
  }
  if (options.tensors !== undefined) tensors = options.tensors(tensors);
  const config: Record<string, unknown> = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: "HuggingFaceTB/SmolLM2-135M-Instruct",
    bias: "none",
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: options.layers === undefined ? null : [...options.layers],
    lora_alpha: options.alpha ?? 16,
    lora_dropout: 0.05,
    modules_to_save: null,
    peft_type: "LORA",
    r: rank,
    rank_pattern: {},
    revision: null,
    target_modules: [...targetModules],
    task_type: "CAUSAL_LM",
    use_dora: false,
    use_rslora: false,
  };
  const written = Object.fromEntries(
    Object.entries({ ...config, ...options.config }).filter(([, value]) => value !== undefined),
  );
  return {
    config: Buffer.from(JSON.stringify(written, null, 2)),
    weights: encodeSafetensors(tensors, { format: "pt" }),
  };
}

/** Little-endian bytes of `values` in `dtype`. */
export function encodeFloats(values: Float32Array, dtype: LoraDtype): Buffer {
  return encode(values, dtype);
}

function encode(values: Float32Array, dtype: LoraDtype): Buffer {
  if (dtype === "F32") return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const out = Buffer.alloc(values.length * 2);
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < values.length; i++) {
    out.writeUInt16LE(
      dtype === "F16" ? f32ToF16Bits(values[i] as number) : f32ToBf16Bits(words[i] as number),
      i * 2,
    );
  }
  return out;
}

/** bfloat16 is the top half of an f32; rounded to nearest even, as torch converts. */
function f32ToBf16Bits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return (bits >>> 16) | 0x40;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

function uniform(random: () => number, count: number, bound: number): Float32Array {
  const values = new Float32Array(count);
  for (let i = 0; i < count; i++) values[i] = (random() * 2 - 1) * bound;
  return values;
}

/** A small seeded PRNG (Mulberry32): reproducible weights without a dependency. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
