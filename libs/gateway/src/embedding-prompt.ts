import type { ModelEntry } from "@shoal/config";
import { InvalidArgumentError } from "./errors.js";

/** What of an embedding call a prompt touches (`EmbedCall` has these and more). */
interface PromptedInputs {
  readonly inputs: readonly string[];
  readonly tokenInputs?: readonly (readonly number[])[];
}

/**
 * `call` with the model's instruction prefix before each text input: the prompt the request
 * names (`prompt_name`), else the catalog's `defaultPrompt`, else none. Prefixing here, before
 * annotation, makes the token counts, truncation and length buckets those of the text the model
 * reads. Token ids are used as they are, so naming a prompt for them is refused.
 *
 * @throws InvalidArgumentError for a prompt the model does not have, or one named for token ids.
 */
export function withPrompt<Call extends PromptedInputs>(
  model: ModelEntry,
  call: Call,
  promptName: string | undefined,
): Call {
  const prompts = model.prompts?.prompts ?? {};
  if (promptName !== undefined && !Object.hasOwn(prompts, promptName)) {
    const names = Object.keys(prompts);
    throw new InvalidArgumentError(
      names.length === 0
        ? `model "${model.id}" has no prompts; leave \`prompt_name\` out`
        : `model "${model.id}" has the prompts ${names.join(", ")}; got "${promptName}"`,
    );
  }
  if (promptName !== undefined && (call.tokenInputs?.length ?? 0) > 0) {
    throw new InvalidArgumentError("`prompt_name` applies to text inputs, not token ids");
  }
  const name = promptName ?? model.prompts?.defaultPrompt;
  const prefix = name === undefined ? undefined : prompts[name];
  if (prefix === undefined || call.inputs.length === 0) return call;
  return { ...call, inputs: call.inputs.map((input) => prefix + input) };
}
