import type { ModelEntry } from "@shoal/config";
import { ErrorCode } from "@shoal/proto";
import type { AnswerOutcome } from "./answers.js";
import type { PulledItem } from "./pulled-item.js";

/**
 * The answer for an item whose client refused truncation (`truncate: false`) when the sidecar
 * had to cut one of its inputs; undefined when the item may be answered. This is the one place
 * the refusal is decided, from the sidecar's exact counts: the gateway only estimates.
 */
export function overLengthAnswer(
  p: PulledItem,
  truncated: readonly boolean[],
  model: ModelEntry,
): AnswerOutcome | undefined {
  if (p.truncate) return undefined;
  const index = truncated.findIndex(Boolean);
  if (index < 0) return undefined;
  const what = p.item.task.case === "score" ? "document" : "input";
  return {
    case: "error",
    code: ErrorCode.INVALID_ARGUMENT,
    message: `${what} ${p.item.firstInput + index} is longer than the model's ${model.maxInputTokens} tokens and truncate is false`,
  };
}
