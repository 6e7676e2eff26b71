import type { ModelEntry } from "@shoal/config";
import { InvalidArgumentError, type EmbedCall, type EmbedOutcome } from "@shoal/gateway";
import { JsonFloats } from "./json-floats.js";

/**
 * How embeddings are written: OpenAI's `float` (number arrays) and `base64` (of little-endian
 * float32 bytes), or `binary`, the raw bytes themselves, for MessagePack answers.
 */
export type EmbeddingEncoding = "float" | "base64" | "binary";

/** An OpenAI `POST /v1/embeddings` body, validated. */
export interface OpenAIEmbeddingsRequest {
  readonly call: EmbedCall;
  /** What the client asked for; absent means OpenAI's default, `float`. */
  readonly encodingFormat: "float" | "base64" | undefined;
  /** Whether the input was a single one (OpenAI answers a list either way). */
  readonly single: boolean;
  /** OpenAI's output width; absent means the model's native width. */
  readonly dimensions?: number;
}

const INPUT_SHAPES =
  "`input` must be a string, an array of strings, an array of token ids or an array of arrays of token ids";

/**
 * Validates the OpenAI request shape. `input` may be text or token ids, as OpenAI accepts.
 * Shoal adds two optional fields: `truncate` (default true), since OpenAI's API has no way to
 * ask for an error instead of silent truncation, and `prompt_name`, as TEI takes it.
 */
export function parseEmbeddingsRequest(body: unknown): OpenAIEmbeddingsRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body) || isBytes(body)) {
    throw new InvalidArgumentError(
      "request body must be an object (a JSON object or MessagePack map)",
    );
  }
  const b = body as Record<string, unknown>;
  const model = b["model"];
  if (typeof model !== "string" || model === "") {
    throw new InvalidArgumentError("`model` is required and must be a string");
  }
  const input = b["input"];
  if (input === undefined) throw new InvalidArgumentError("`input` is required");
  const { inputs, tokenInputs, single } = parseInput(input);
  const format = b["encoding_format"];
  if (format !== undefined && format !== "float" && format !== "base64") {
    throw new InvalidArgumentError('`encoding_format` must be "float" or "base64"');
  }
  const truncate = b["truncate"] ?? true;
  if (typeof truncate !== "boolean") throw new InvalidArgumentError("`truncate` must be a boolean");
  const dimensions = b["dimensions"];
  if (
    dimensions !== undefined &&
    (typeof dimensions !== "number" || !Number.isInteger(dimensions) || dimensions < 1)
  ) {
    throw new InvalidArgumentError("`dimensions` must be a positive integer");
  }
  const promptName = b["prompt_name"];
  if (promptName !== undefined && typeof promptName !== "string") {
    throw new InvalidArgumentError("`prompt_name` must be a string");
  }
  return {
    call: {
      model,
      inputs,
      truncate,
      ...(tokenInputs.length > 0 ? { tokenInputs } : {}),
      ...(promptName === undefined ? {} : { promptName }),
    },
    encodingFormat: format,
    single,
    ...(dimensions === undefined ? {} : { dimensions }),
  };
}

function parseInput(input: unknown): {
  inputs: string[];
  tokenInputs: number[][];
  single: boolean;
} {
  if (typeof input === "string") return { inputs: [input], tokenInputs: [], single: true };
  if (!Array.isArray(input)) throw new InvalidArgumentError(INPUT_SHAPES);
  if (input.every((i): i is string => typeof i === "string")) {
    return { inputs: input, tokenInputs: [], single: false };
  }
  if (input.every((i): i is number => typeof i === "number")) {
    return { inputs: [], tokenInputs: [input], single: true };
  }
  if (
    input.every((i): i is number[] => Array.isArray(i) && i.every((id) => typeof id === "number"))
  ) {
    return { inputs: [], tokenInputs: input, single: false };
  }
  throw new InvalidArgumentError(INPUT_SHAPES);
}

/**
 * The width answered: the model's own, or a narrower `dimensions` the catalog says the model
 * was trained to be truncated to (Matryoshka). Anything else is refused rather than cut, since
 * a cut vector of a model not trained for it loses quality the client cannot see.
 */
export function outputWidth(model: ModelEntry, dimensions: number | undefined): number {
  if (dimensions === undefined || dimensions === model.dimensions) return model.dimensions;
  const allowed = model.matryoshkaDimensions ?? [];
  if (allowed.includes(dimensions)) return dimensions;
  throw new InvalidArgumentError(
    allowed.length === 0
      ? `model "${model.id}" produces ${model.dimensions} dimensions and cannot be truncated; \`dimensions\` must be ${model.dimensions} or absent`
      : `model "${model.id}" serves \`dimensions\` ${[...allowed, model.dimensions].join(", ")}; got ${dimensions}`,
  );
}

/**
 * The OpenAI response body, plus Shoal's per-item `truncated` flag. Rows narrower than the
 * model's width are its leading coordinates, renormalised to unit length as Matryoshka
 * models are meant to be used.
 */
export function embeddingsResponse(
  outcome: EmbedOutcome,
  encoding: EmbeddingEncoding,
  width: number = outcome.dim,
): Record<string, unknown> {
  const bytes = rowsOfWidth(outcome, width);
  const rowBytes = width * 4;
  const data = outcome.tokens.map((_, index) => {
    const row = bytes.subarray(index * rowBytes, (index + 1) * rowBytes);
    return {
      object: "embedding",
      index,
      embedding:
        encoding === "binary"
          ? row
          : encoding === "base64"
            ? row.toString("base64")
            : new JsonFloats(row),
      truncated: outcome.truncated[index] ?? false,
    };
  });
  const tokens = outcome.tokens.reduce((n, t) => n + t, 0);
  return {
    object: "list",
    data,
    model: outcome.model.id,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** Little-endian float32 rows of `width`: the answer's own bytes when no truncation is asked. */
function rowsOfWidth(outcome: EmbedOutcome, width: number): Buffer {
  const full = Buffer.from(
    outcome.embeddings.buffer,
    outcome.embeddings.byteOffset,
    outcome.embeddings.byteLength,
  );
  if (width >= outcome.dim) return full;
  const rows = outcome.tokens.length;
  const out = Buffer.alloc(rows * width * 4);
  for (let r = 0; r < rows; r++) {
    let sum = 0;
    for (let i = 0; i < width; i++) sum += full.readFloatLE((r * outcome.dim + i) * 4) ** 2;
    const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0;
    for (let i = 0; i < width; i++) {
      out.writeFloatLE(full.readFloatLE((r * outcome.dim + i) * 4) * scale, (r * width + i) * 4);
    }
  }
  return out;
}

function isBytes(value: object): boolean {
  return value instanceof Uint8Array;
}
