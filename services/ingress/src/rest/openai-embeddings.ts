import { InvalidArgumentError, type EmbedCall, type EmbedOutcome } from "@shoal/gateway";

/** An OpenAI `POST /v1/embeddings` body, validated. */
export interface OpenAIEmbeddingsRequest {
  readonly call: EmbedCall;
  readonly encodingFormat: "float" | "base64";
  /** Whether the input was a single string (OpenAI answers a list either way). */
  readonly single: boolean;
  /** OpenAI's output width; only the model's native width is served until truncation lands. */
  readonly dimensions?: number;
}

/**
 * Validates the OpenAI request shape. Shoal adds one optional field, `truncate` (default true),
 * since OpenAI's API has no way to ask for an error instead of silent truncation.
 */
export function parseEmbeddingsRequest(body: unknown): OpenAIEmbeddingsRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new InvalidArgumentError("request body must be a JSON object");
  }
  const b = body as Record<string, unknown>;
  const model = b["model"];
  if (typeof model !== "string" || model === "") {
    throw new InvalidArgumentError("`model` is required and must be a string");
  }
  const input = b["input"];
  let inputs: string[];
  if (typeof input === "string") {
    inputs = [input];
  } else if (Array.isArray(input) && input.every((i): i is string => typeof i === "string")) {
    inputs = input;
  } else if (input === undefined) {
    throw new InvalidArgumentError("`input` is required");
  } else {
    throw new InvalidArgumentError("`input` must be a string or an array of strings");
  }
  const format = b["encoding_format"] ?? "float";
  if (format !== "float" && format !== "base64") {
    throw new InvalidArgumentError('`encoding_format` must be "float" or "base64"');
  }
  const truncate = b["truncate"] ?? true;
  if (typeof truncate !== "boolean") throw new InvalidArgumentError("`truncate` must be a boolean");
  const dimensions = b["dimensions"];
  if (
    dimensions !== undefined &&
    (typeof dimensions !== "number" || !Number.isInteger(dimensions))
  ) {
    throw new InvalidArgumentError("`dimensions` must be an integer");
  }
  return {
    call: { model, inputs, truncate },
    encodingFormat: format,
    single: typeof input === "string",
    ...(dimensions === undefined ? {} : { dimensions }),
  };
}

/** The OpenAI response body, plus Shoal's per-item `truncated` flag. */
export function embeddingsResponse(
  outcome: EmbedOutcome,
  format: "float" | "base64",
): Record<string, unknown> {
  const rowBytes = outcome.dim * 4;
  const bytes = Buffer.from(
    outcome.embeddings.buffer,
    outcome.embeddings.byteOffset,
    outcome.embeddings.byteLength,
  );
  const data = outcome.tokens.map((_, index) => {
    const row = bytes.subarray(index * rowBytes, (index + 1) * rowBytes);
    return {
      object: "embedding",
      index,
      embedding: format === "base64" ? row.toString("base64") : floats(row),
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

function floats(row: Buffer): number[] {
  const out = new Array<number>(row.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = row.readFloatLE(i * 4);
  return out;
}
