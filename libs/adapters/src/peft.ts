import {
  InvalidSafetensorsError,
  parseSafetensors,
  type ParsedSafetensors,
} from "@shoal/model-sources";
import type { BaseShape } from "./base-shape.js";
import {
  isLoraTargetModule,
  LORA_DTYPES,
  LORA_TARGET_MODULES,
  loraModuleShape,
  loraTensorName,
  type LoraDtype,
  type LoraTargetModule,
} from "./lora-modules.js";

/** The two files of a PEFT LoRA adapter directory, as uploaded. */
export interface AdapterFiles {
  /** `adapter_config.json`. */
  readonly config: Uint8Array;
  /** `adapter_model.safetensors`. */
  readonly weights: Uint8Array;
}

/** What a validated adapter is: what a worker needs to apply it, and what a listing shows. */
export interface AdapterSummary {
  /** `r`: the inner width of every A/B pair. */
  readonly rank: number;
  /** `lora_alpha`; the update is scaled by alpha / rank, or alpha / √rank with rsLoRA. */
  readonly alpha: number;
  /** `use_rslora`. */
  readonly rslora: boolean;
  /** Adapted projections, in {@link LORA_TARGET_MODULES} order. */
  readonly targetModules: readonly LoraTargetModule[];
  /** The one dtype every tensor is stored in. */
  readonly dtype: LoraDtype;
  /** Elements in all A and B matrices together. */
  readonly parameters: number;
  /** Indices of the adapted decoder layers, ascending (all of them unless restricted). */
  readonly layers: readonly number[];
}

export interface LoraValidationOptions {
  /** Largest `r` accepted; larger ranks cost memory and batch poorly. @default 64 */
  readonly maxRank?: number;
}

/** An adapter that fails validation; the message says exactly what is wrong, for its uploader. */
export class InvalidAdapterError extends Error {
  override readonly name = "InvalidAdapterError";
}

export const CONFIG_FILE = "adapter_config.json";
export const WEIGHTS_FILE = "adapter_model.safetensors";

/** Bigger than any real adapter config (PEFT's are about 1 KiB). */
const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Checks a PEFT LoRA adapter against the base model it is for, so only adapters a worker can
 * apply exactly are ever stored:
 *
 * - `adapter_config.json`: `peft_type` "LORA"; `task_type` absent or "CAUSAL_LM"; `r` an
 *   integer in [1, maxRank]; `lora_alpha` a finite number > 0; `target_modules` a non-empty list
 *   of distinct Llama projections (the regex-string and "all-linear" forms are refused); `bias`
 *   "none"; no DoRA, `modules_to_save`, `fan_in_fan_out`, rank or alpha patterns; `use_rslora`
 *   a boolean; `layers_to_transform` a layer index or a list of distinct ones. Keys that change
 *   what the weights mean and that no worker applies (`layer_replication`, `lora_bias`,
 *   `exclude_modules`, `target_parameters`, `trainable_token_indices`, `use_qalora`,
 *   `alora_invocation_tokens`) must be unset. Keys that
 *   only describe training (`lora_dropout`, `init_lora_weights`, …) are ignored.
 * - `adapter_model.safetensors`: well-formed; exactly one `lora_A` and one `lora_B` for every
 *   adapted layer and module and nothing else; all in one of F32, F16, BF16; `lora_A` shaped
 *   `[r, in]` and `lora_B` `[out, r]` for the module's widths in `shape`; every value finite.
 *
 * @throws InvalidAdapterError naming the file, the field or tensor, and what was expected.
 */
export function validateLoraAdapter(
  files: AdapterFiles,
  shape: BaseShape,
  options: LoraValidationOptions = {},
): AdapterSummary {
  const config = checkConfig(parseConfig(files.config), shape, options.maxRank ?? 64);
  const { dtype, parameters } = checkWeights(files.weights, config, shape);
  return { ...config, dtype, parameters };
}

type CheckedConfig = Omit<AdapterSummary, "dtype" | "parameters">;

function parseConfig(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength > MAX_CONFIG_BYTES) {
    throw new InvalidAdapterError(
      `${CONFIG_FILE} is ${bytes.byteLength} bytes; a PEFT config is a few KiB`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    const detail = error instanceof SyntaxError ? error.message : "not UTF-8";
    throw new InvalidAdapterError(`${CONFIG_FILE} is not valid JSON (${detail})`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new InvalidAdapterError(`${CONFIG_FILE} is not a JSON object`);
  }
  return json as Record<string, unknown>;
}

function checkConfig(
  config: Record<string, unknown>,
  shape: BaseShape,
  maxRank: number,
): CheckedConfig {
  const fail = (message: string): never => {
    throw new InvalidAdapterError(`${CONFIG_FILE}: ${message}`);
  };
  const field = (key: string): unknown => config[key];
  const show = (value: unknown): string => (value === undefined ? "null" : JSON.stringify(value));

  if (field("peft_type") !== "LORA") {
    fail(`peft_type must be "LORA", found ${show(field("peft_type") ?? null)}`);
  }
  const taskType = field("task_type");
  if (taskType !== undefined && taskType !== null && taskType !== "CAUSAL_LM") {
    fail(`task_type must be "CAUSAL_LM" (or unset), found ${show(taskType)}`);
  }
  const rank = field("r");
  if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 1 || rank > maxRank) {
    fail(`r must be an integer from 1 to ${maxRank}, found ${show(rank ?? null)}`);
  }
  const alpha = field("lora_alpha");
  if (typeof alpha !== "number" || !Number.isFinite(alpha) || alpha <= 0) {
    fail(`lora_alpha must be a number greater than 0, found ${show(alpha ?? null)}`);
  }
  const targetModules = checkTargetModules(field("target_modules"), fail);
  const bias = field("bias");
  if (bias !== undefined && bias !== null && bias !== "none") {
    fail(`bias must be "none": trained biases are not supported, found ${show(bias)}`);
  }
  const mustBeOff: readonly [string, string][] = [
    ["use_dora", "DoRA adapters are not supported"],
    ["fan_in_fan_out", "fan_in_fan_out (Conv1D-style weights) does not apply to Llama"],
    ["lora_bias", "LoRA biases are not supported"],
    ["use_qalora", "QA-LoRA (pooled lora_A inputs) is not supported"],
  ];
  for (const [key, why] of mustBeOff) {
    const value = field(key);
    if (value !== undefined && value !== null && value !== false)
      fail(`${key} must be false: ${why}`);
  }
  const mustBeEmpty: readonly [string, string][] = [
    ["modules_to_save", "fully trained modules are not supported, only LoRA matrices"],
    ["rank_pattern", "every module must use r"],
    ["alpha_pattern", "every module must use lora_alpha"],
    ["layer_replication", "layer replication is not supported"],
    ["exclude_modules", "list the adapted modules in target_modules instead"],
    ["target_parameters", "only target_modules are supported"],
    ["trainable_token_indices", "trained token embeddings are not supported"],
    [
      "alora_invocation_tokens",
      "activated LoRA (applied after invocation tokens) is not supported",
    ],
  ];
  for (const [key, why] of mustBeEmpty) {
    if (!isEmpty(field(key))) fail(`${key} must be unset or empty: ${why}`);
  }
  const rslora = field("use_rslora");
  if (rslora !== undefined && rslora !== null && typeof rslora !== "boolean") {
    fail(`use_rslora must be true or false, found ${show(rslora)}`);
  }
  return {
    rank: rank as number,
    alpha: alpha as number,
    rslora: rslora === true,
    targetModules,
    layers: checkLayers(field("layers_to_transform"), shape.layers, fail),
  };
}

function checkTargetModules(value: unknown, fail: (message: string) => never): LoraTargetModule[] {
  const allowed = LORA_TARGET_MODULES.join(", ");
  if (typeof value === "string") {
    fail(
      `target_modules must be a list of module names (some of ${allowed}); ` +
        `the string form ${JSON.stringify(value)} (a regex or "all-linear") is not supported`,
    );
  }
  if (!Array.isArray(value) || value.length === 0) {
    fail(`target_modules must be a non-empty list of module names (some of ${allowed})`);
  }
  const seen = new Set<LoraTargetModule>();
  for (const module of value as unknown[]) {
    if (!isLoraTargetModule(module)) {
      fail(`target_modules holds ${JSON.stringify(module)}, which is not one of ${allowed}`);
    }
    if (seen.has(module)) fail(`target_modules lists ${module} twice`);
    seen.add(module);
  }
  return LORA_TARGET_MODULES.filter((m) => seen.has(m));
}

function checkLayers(value: unknown, layers: number, fail: (message: string) => never): number[] {
  if (value === undefined || value === null) return Array.from({ length: layers }, (_, i) => i);
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0) fail("layers_to_transform must not be an empty list");
  const seen = new Set<number>();
  for (const layer of list) {
    if (typeof layer !== "number" || !Number.isInteger(layer) || layer < 0 || layer >= layers) {
      fail(
        `layers_to_transform holds ${JSON.stringify(layer)}; the base model has layers 0 to ${layers - 1}`,
      );
    }
    if (seen.has(layer)) fail(`layers_to_transform lists layer ${layer} twice`);
    seen.add(layer);
  }
  return [...seen].sort((a, b) => a - b);
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.keys(value).length === 0;
  return false;
}

function checkWeights(
  bytes: Uint8Array,
  config: CheckedConfig,
  shape: BaseShape,
): { dtype: LoraDtype; parameters: number } {
  const fail = (message: string): never => {
    throw new InvalidAdapterError(`${WEIGHTS_FILE}: ${message}`);
  };
  let parsed: ParsedSafetensors;
  try {
    parsed = parseSafetensors(bytes);
  } catch (error) {
    if (!(error instanceof InvalidSafetensorsError)) throw error;
    return fail(`not a valid safetensors file (${error.message})`);
  }
  const expected = new Map<string, readonly [number, number]>();
  for (const layer of config.layers) {
    for (const module of config.targetModules) {
      const widths = loraModuleShape(module, shape);
      expected.set(loraTensorName(layer, module, "A"), [config.rank, widths.in]);
      expected.set(loraTensorName(layer, module, "B"), [widths.out, config.rank]);
    }
  }
  const { tensors } = parsed.header;
  const unexpected = tensors.filter((t) => !expected.has(t.name));
  if (unexpected.length > 0) {
    fail(
      `${unexpected.length} tensor(s) the config does not call for, e.g. ${unexpected[0]?.name ?? ""} ` +
        `(the config adapts ${config.targetModules.join(", ")} on ${describeLayers(config.layers)})`,
    );
  }
  const present = new Set(tensors.map((t) => t.name));
  const missing = [...expected.keys()].filter((name) => !present.has(name));
  if (missing.length > 0) {
    fail(`${missing.length} tensor(s) the config calls for are missing, e.g. ${missing[0] ?? ""}`);
  }
  const dtype = tensors[0]?.dtype;
  if (!(LORA_DTYPES as readonly string[]).includes(dtype ?? "")) {
    fail(`tensors must be ${LORA_DTYPES.join(", ")}, found ${dtype ?? "none"}`);
  }
  let parameters = 0;
  for (const tensor of tensors) {
    if (tensor.dtype !== dtype) {
      fail(
        `all tensors must share one dtype: ${tensor.name} is ${tensor.dtype}, others ${dtype ?? ""}`,
      );
    }
    const want = expected.get(tensor.name) as readonly [number, number];
    if (tensor.shape.length !== 2 || tensor.shape[0] !== want[0] || tensor.shape[1] !== want[1]) {
      fail(
        `${tensor.name} has shape ${JSON.stringify(tensor.shape)}, expected [${want.join(", ")}]`,
      );
    }
    const [begin, end] = tensor.dataOffsets;
    const at = firstNonFinite(
      bytes.subarray(parsed.dataStart + begin, parsed.dataStart + end),
      dtype as LoraDtype,
    );
    if (at !== -1) fail(`${tensor.name} holds a NaN or infinite value (element ${at})`);
    parameters += want[0] * want[1];
  }
  return { dtype: dtype as LoraDtype, parameters };
}

/**
 * Index of the first NaN or ±Inf, or -1: an all-ones exponent is what makes a float non-finite
 * in each of the three formats, so the check reads bit patterns without converting.
 */
function firstNonFinite(data: Uint8Array, dtype: LoraDtype): number {
  const copy = new Uint8Array(data);
  if (dtype === "F32") {
    const words = new Uint32Array(copy.buffer, 0, copy.byteLength / 4);
    for (let i = 0; i < words.length; i++) {
      if (((words[i] as number) & 0x7f800000) === 0x7f800000) return i;
    }
    return -1;
  }
  const exponent = dtype === "F16" ? 0x7c00 : 0x7f80;
  const halves = new Uint16Array(copy.buffer, 0, copy.byteLength / 2);
  for (let i = 0; i < halves.length; i++) {
    if (((halves[i] as number) & exponent) === exponent) return i;
  }
  return -1;
}

function describeLayers(layers: readonly number[]): string {
  const contiguous = layers.every((layer, i) => i === 0 || layer === (layers[i - 1] as number) + 1);
  if (contiguous && layers.length > 1) return `layers ${layers[0]} to ${layers[layers.length - 1]}`;
  return `layer(s) ${layers.join(", ")}`;
}
