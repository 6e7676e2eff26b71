import { ConfigError } from "./errors.js";

/**
 * An embedding model's named instruction prefixes, as sentence-transformers keeps them in
 * `prompts`: e5 wants `"query: "` and `"passage: "`, bge and Qwen3-Embedding an instruction
 * before queries only. Requests pick one by name (`prompt_name`); `defaultPrompt`, when set, is
 * what a text input without one gets.
 */
export interface EmbeddingPrompts {
  readonly prompts: Readonly<Record<string, string>>;
  readonly defaultPrompt?: string;
}

const PROMPT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** Longer than any instruction a model ships, short enough never to crowd out the input. */
const MAX_PROMPT_CHARS = 1024;

/** A catalog entry's `prompts` and `defaultPrompt`; embedding models only. */
export function compileEmbeddingPrompts(
  prompts: unknown,
  defaultPrompt: unknown,
  family: string,
  where: string,
): EmbeddingPrompts | undefined {
  if (prompts === undefined) {
    if (defaultPrompt !== undefined) {
      throw new ConfigError(`${where}.defaultPrompt names a prompt, but the entry has no prompts`);
    }
    return undefined;
  }
  if (family !== "embedding") {
    throw new ConfigError(`${where}.prompts is only for family embedding, not ${family}`);
  }
  if (typeof prompts !== "object" || prompts === null || Array.isArray(prompts)) {
    throw new ConfigError(`${where}.prompts must be an object of prompt names to prefixes`);
  }
  const entries = Object.entries(prompts as Record<string, unknown>);
  if (entries.length === 0) throw new ConfigError(`${where}.prompts must name at least one`);
  for (const [name, prefix] of entries) {
    if (!PROMPT_NAME.test(name)) {
      throw new ConfigError(
        `${where}.prompts: "${name}" is not a prompt name (lower case, digits, _ and -, up to 32)`,
      );
    }
    if (typeof prefix !== "string" || prefix === "" || prefix.length > MAX_PROMPT_CHARS) {
      throw new ConfigError(
        `${where}.prompts.${name} must be a non-empty string of at most ${MAX_PROMPT_CHARS} characters`,
      );
    }
  }
  const compiled = Object.freeze(Object.fromEntries(entries) as Record<string, string>);
  if (defaultPrompt === undefined) return { prompts: compiled };
  if (typeof defaultPrompt !== "string" || !(defaultPrompt in compiled)) {
    throw new ConfigError(
      `${where}.defaultPrompt must be one of ${Object.keys(compiled).join(", ")}`,
    );
  }
  return { prompts: compiled, defaultPrompt };
}
