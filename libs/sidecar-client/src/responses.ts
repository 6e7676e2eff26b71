import { Fields } from "./fields.js";
import type { FrameBody } from "./frame.js";
import { isSidecarErrorCode, SidecarError } from "./sidecar-error.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

/** Backends a sidecar reports in `health`; `sim` when it runs with `--backend sim`. */
export type SidecarBackend = "candle-cpu" | "candle-cuda" | "sim";
const BACKENDS = ["candle-cpu", "candle-cuda", "sim"] as const satisfies readonly SidecarBackend[];

/** Model families a sidecar serves; each has its own op (`embed`, `score`, …). */
export type ModelFamily = "embedding" | "rerank" | "classify" | "extract" | "generate";
const FAMILIES = [
  "embedding",
  "rerank",
  "classify",
  "extract",
  "generate",
] as const satisfies readonly ModelFamily[];

/** Answer to `health`. */
export interface HealthResult {
  readonly version: string;
  readonly backend: SidecarBackend;
  /** Human-readable accelerator name, e.g. `cpu` or `cuda:0`. */
  readonly device: string;
}

/** Answer to `load`. */
export interface LoadResult {
  readonly model: string;
  readonly family: ModelFamily;
  /**
   * Embedding width; for `classify` and `extract` the number of labels, for `generate` the
   * vocabulary size.
   */
  readonly dim: number;
  /** The labels of a `classify` or `extract` model, in id order. */
  readonly labels?: string[];
  /** Context length of a `generate` model, in tokens. */
  readonly contextTokens?: number;
  /** Longest input, in tokens, the model accepts; longer inputs are truncated or refused. */
  readonly maxInputTokens: number;
  /** Size of the weights as loaded. */
  readonly memoryBytes: number;
  readonly loadUs: number;
}

/** Answer to `unload`. */
export interface UnloadResult {
  readonly model: string;
}

/** Answer to `load_adapter`. */
export interface AdapterLoadResult {
  readonly model: string;
  readonly adapter: string;
  /** The adapter's rank `r`. */
  readonly rank: number;
  /** Bytes its matrices take on the device. */
  readonly memoryBytes: number;
  readonly loadUs: number;
}

/** A LoRA adapter resident with its model, as `stats` lists it. */
export interface AdapterStats {
  readonly adapter: string;
  readonly rank: number;
  readonly memoryBytes: number;
}

/** Answer to `embed`. */
export interface EmbedResult {
  readonly dim: number;
  /** Number of rows, equal to the number of inputs. */
  readonly count: number;
  /**
   * `count × dim` f32 little-endian, row-major, exactly the bytes the sidecar sent: the worker
   * forwards them without conversion. Read them with {@link toFloat32Array}.
   */
  readonly embeddings: Uint8Array;
  /** Tokens per input after truncation, special tokens included. */
  readonly tokens: number[];
  /** Whether each input was cut to the model's limit. */
  readonly truncated: boolean[];
  /** Time the batch waited for its model thread. */
  readonly queueUs: number;
  /** Tokenisation, forward pass and pooling. */
  readonly computeUs: number;
}

/** Counters for one resident model, since it was loaded. */
export interface ModelStats {
  readonly model: string;
  readonly family: ModelFamily;
  readonly memoryBytes: number;
  readonly batches: number;
  readonly items: number;
  readonly tokens: number;
  readonly busyUs: number;
  /** `generate` models: sequences finished since load. */
  readonly sequences?: number;
  /** `generate` models: tokens those sequences generated. */
  readonly generatedTokens?: number;
  /** `generate` models: sequences running now (a cancelled one leaves at the next step). */
  readonly activeSequences?: number;
  /** `generate` models: the LoRA adapters loaded. */
  readonly adapters?: AdapterStats[];
}

/** Answer to `stats`. */
export interface StatsResult {
  readonly uptimeUs: number;
  readonly models: ModelStats[];
  /**
   * A sidecar whose simulated models share one device (`--sim-device shared`): the time that
   * device has been busy, µs. Its models' `busyUs` then also count their turns waiting for it.
   */
  readonly deviceBusyUs?: number;
}

/** A response split into its request id and either its body or the sidecar's error. */
export type Envelope =
  | { readonly id: number; readonly ok: true; readonly body: FrameBody }
  | { readonly id: number; readonly ok: false; readonly error: SidecarError };

/** Reads the fields every response has: `id`, `ok` and, when not ok, `error`. */
export function parseEnvelope(body: FrameBody): Envelope {
  const fields = new Fields(body, "response");
  const id = fields.uint("id");
  if (fields.boolean("ok")) return { id, ok: true, body };
  const error = fields.map("error");
  const code = error.string("code");
  const message = error.string("message");
  if (!isSidecarErrorCode(code)) {
    throw new SidecarProtocolError(`response ${id}: unknown error code "${code}": ${message}`);
  }
  return { id, ok: false, error: new SidecarError(code, message) };
}

export function parseHealth(body: FrameBody): HealthResult {
  const f = new Fields(body, "health response");
  return {
    version: f.string("version"),
    backend: f.oneOf("backend", BACKENDS),
    device: f.string("device"),
  };
}

export function parseLoad(body: FrameBody): LoadResult {
  const f = new Fields(body, "load response");
  const family = f.oneOf("family", FAMILIES);
  const labels =
    family === "classify" || family === "extract" ? f.stringArray("labels") : undefined;
  const contextTokens = family === "generate" ? f.optionalUint("context_tokens") : undefined;
  return {
    model: f.string("model"),
    family,
    dim: f.uint("dim"),
    maxInputTokens: f.uint("max_input_tokens"),
    memoryBytes: f.uint("memory_bytes"),
    loadUs: f.uint("load_us"),
    ...(labels === undefined ? {} : { labels }),
    ...(contextTokens === undefined ? {} : { contextTokens }),
  };
}

export function parseUnload(body: FrameBody): UnloadResult {
  return { model: new Fields(body, "unload response").string("model") };
}

export function parseAdapterLoad(body: FrameBody): AdapterLoadResult {
  const f = new Fields(body, "load_adapter response");
  return {
    model: f.string("model"),
    adapter: f.string("adapter"),
    rank: f.uint("rank"),
    memoryBytes: f.uint("memory_bytes"),
    loadUs: f.uint("load_us"),
  };
}

/**
 * Checks the embed response against the request as well as against itself: a row count that
 * differs from the inputs sent would silently misalign results with requests downstream.
 */
export function parseEmbed(body: FrameBody, inputCount: number): EmbedResult {
  const f = new Fields(body, "embed response");
  const dim = f.uint("dim");
  const count = f.uint("count");
  const embeddings = f.bin("embeddings");
  const tokens = f.uintArray("tokens");
  const truncated = f.booleanArray("truncated");
  const result = {
    dim,
    count,
    embeddings,
    tokens,
    truncated,
    queueUs: f.uint("queue_us"),
    computeUs: f.uint("compute_us"),
  };
  if (count !== inputCount) {
    throw new SidecarProtocolError(
      `embed response: count ${count} differs from ${inputCount} inputs sent`,
    );
  }
  if (embeddings.byteLength !== count * dim * 4) {
    throw new SidecarProtocolError(
      `embed response: embeddings hold ${embeddings.byteLength} bytes, expected count × dim × 4 = ${count * dim * 4}`,
    );
  }
  if (tokens.length !== count || truncated.length !== count) {
    throw new SidecarProtocolError(
      `embed response: tokens (${tokens.length}) and truncated (${truncated.length}) must both have count = ${count} entries`,
    );
  }
  return result;
}

export function parseStats(body: FrameBody): StatsResult {
  const f = new Fields(body, "stats response");
  return {
    uptimeUs: f.uint("uptime_us"),
    models: f.mapArray("models").map((m) => ({
      model: m.string("model"),
      family: m.oneOf("family", FAMILIES),
      memoryBytes: m.uint("memory_bytes"),
      batches: m.uint("batches"),
      items: m.uint("items"),
      tokens: m.uint("tokens"),
      busyUs: m.uint("busy_us"),
      ...optionalCounters(m),
      ...(m.has("adapters")
        ? {
            adapters: m.mapArray("adapters").map((a) => ({
              adapter: a.string("adapter"),
              rank: a.uint("rank"),
              memoryBytes: a.uint("memory_bytes"),
            })),
          }
        : {}),
    })),
    ...(f.has("device_busy_us") ? { deviceBusyUs: f.uint("device_busy_us") } : {}),
  };
}

/** The generation counters, reported by sidecars that serve `generate` models. */
function optionalCounters(
  m: Fields,
): Pick<ModelStats, "sequences" | "generatedTokens" | "activeSequences"> {
  const sequences = m.optionalUint("sequences");
  const generatedTokens = m.optionalUint("generated_tokens");
  const activeSequences = m.optionalUint("active_sequences");
  return {
    ...(sequences === undefined ? {} : { sequences }),
    ...(generatedTokens === undefined ? {} : { generatedTokens }),
    ...(activeSequences === undefined ? {} : { activeSequences }),
  };
}
