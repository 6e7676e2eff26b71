import type { ModelEntry } from "@shoal/config";
import type { ModelAccess } from "./access.js";
import { InvalidArgumentError } from "./errors.js";

export interface EmbedLimits {
  /** @default 2048 */
  readonly maxInputs: number;
  /** Longest text accepted at all, in UTF-16 code units; truncation happens in tokens later. @default 1_000_000 */
  readonly maxInputChars: number;
}

/**
 * Checks what ingress can check without tokenizing: a known model, and a non-empty list of
 * non-empty strings within size limits. A whitespace-only string is a valid input (the model
 * embeds it); an empty one is not. Inputs `offloaded` to the blob store are bounded by the
 * request body limit instead of `maxInputChars`.
 */
export function validateEmbed(
  access: ModelAccess,
  model: string,
  inputs: readonly string[],
  limits: EmbedLimits,
  offloaded: (index: number) => boolean = () => false,
): ModelEntry {
  const entry = embeddingModel(access, model);
  checkCount(inputs.length, limits);
  inputs.forEach((text, index) => {
    if (text.length === 0) throw new InvalidArgumentError(`input ${index} is an empty string`);
    if (text.length > limits.maxInputChars && !offloaded(index)) {
      throw new InvalidArgumentError(
        `input ${index} is longer than ${limits.maxInputChars} characters`,
      );
    }
  });
  return entry;
}

/**
 * Token-id inputs: each a non-empty list of non-negative integer ids, none longer than
 * `maxInputChars` ids. Whether each id is in the model's vocabulary is the annotator's check,
 * since only it loads the tokenizer.
 */
export function validateTokenInputs(
  access: ModelAccess,
  model: string,
  inputs: readonly (readonly number[])[],
  limits: EmbedLimits,
): ModelEntry {
  const entry = embeddingModel(access, model);
  checkCount(inputs.length, limits);
  inputs.forEach((ids, index) => {
    if (ids.length === 0) throw new InvalidArgumentError(`input ${index} has no token ids`);
    if (ids.length > limits.maxInputChars) {
      throw new InvalidArgumentError(`input ${index} has more than ${limits.maxInputChars} ids`);
    }
    const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id > 0xffff_ffff);
    if (bad >= 0) {
      throw new InvalidArgumentError(
        `input ${index}: token id at ${bad} must be a non-negative integer`,
      );
    }
  });
  return entry;
}

function embeddingModel(access: ModelAccess, model: string): ModelEntry {
  const entry = access.model(model);
  if (entry.family !== "embedding") {
    throw new InvalidArgumentError(`model "${model}" is a ${entry.family}, not an embedding model`);
  }
  return entry;
}

function checkCount(count: number, limits: EmbedLimits): void {
  if (count === 0) throw new InvalidArgumentError("input must not be empty");
  if (count > limits.maxInputs) {
    throw new InvalidArgumentError(`at most ${limits.maxInputs} inputs per request, got ${count}`);
  }
}
