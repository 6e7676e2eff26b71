import type { Catalog, ModelEntry } from "@shoal/config";
import { InvalidArgumentError, ModelNotFoundError } from "./errors.js";

export interface EmbedLimits {
  /** @default 2048 */
  readonly maxInputs: number;
  /** Longest text accepted at all, in UTF-16 code units; truncation happens in tokens later. @default 1_000_000 */
  readonly maxInputChars: number;
}

/**
 * Checks what ingress can check without tokenizing: a known model, and a non-empty list of
 * non-empty strings within size limits. A whitespace-only string is a valid input (the model
 * embeds it); an empty one is not.
 */
export function validateEmbed(
  catalog: Catalog,
  model: string,
  inputs: readonly string[],
  limits: EmbedLimits,
): ModelEntry {
  const entry = catalog.find(model);
  if (entry === undefined) {
    throw new ModelNotFoundError(
      model,
      catalog.models.map((m) => m.id),
    );
  }
  if (entry.family !== "embedding") {
    throw new InvalidArgumentError(`model "${model}" is a ${entry.family}, not an embedding model`);
  }
  if (inputs.length === 0) throw new InvalidArgumentError("input must not be empty");
  if (inputs.length > limits.maxInputs) {
    throw new InvalidArgumentError(
      `at most ${limits.maxInputs} inputs per request, got ${inputs.length}`,
    );
  }
  inputs.forEach((text, index) => {
    if (text.length === 0) throw new InvalidArgumentError(`input ${index} is an empty string`);
    if (text.length > limits.maxInputChars) {
      throw new InvalidArgumentError(
        `input ${index} is longer than ${limits.maxInputChars} characters`,
      );
    }
  });
  return entry;
}
