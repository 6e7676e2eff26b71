import { clone, create } from "@bufbuild/protobuf";
import { GenerateTaskSchema, SamplingParamsSchema, type GenerateTask } from "@shoal/proto";

/** What the sidecar generates when the request sets no `max_tokens` (docs/sidecar-protocol.md). */
export const SIDECAR_DEFAULT_MAX_TOKENS = 256;

/**
 * Tokens a chat template adds around each message (role markers, separators). SmolLM2's
 * template adds `<|im_start|>role\n` and `<|im_end|>\n`: 5 tokens per message with its
 * tokenizer; other Llama-family templates are close to it.
 */
const CHAT_TOKENS_PER_MESSAGE = 5;

export interface GenerateCost {
  /** Estimated prompt tokens (chat template included): sets the item's length bucket. */
  readonly promptTokens: number;
  /** Upper bound on the work: every sequence's prompt plus its full `max_tokens`. */
  readonly totalTokens: number;
}

/**
 * Cost of a generation: prompt tokens (estimated from the prompt's shape; the sidecar counts
 * exactly and refuses a prompt over the context) plus `max_tokens`, for each of the `n`
 * sequences. The output length is unknown
 * until it ends, so the bound is what a worker plans its capacity with.
 */
export function generateCost(
  task: GenerateTask,
  counter: { count(text: string): number },
): GenerateCost {
  const input = task.input;
  const promptTokens =
    input.case === "chat"
      ? input.value.messages.reduce(
          (n, m) => n + counter.count(m.content) + CHAT_TOKENS_PER_MESSAGE,
          0,
        )
      : counter.count(input.value ?? "");
  const maxTokens = task.sampling?.maxTokens ?? SIDECAR_DEFAULT_MAX_TOKENS;
  return { promptTokens, totalTokens: Math.max(1, task.n) * (promptTokens + maxTokens) };
}

/**
 * The task as queued: a request that sets no `max_tokens` gets the model's `maxNewTokens`
 * (catalog or bundle `serving`) when it has one, so the worker plans with, and the sidecar
 * stops at, the model's own default rather than the sidecar's.
 */
export function withModelDefaultLength(task: GenerateTask, maxNewTokens?: number): GenerateTask {
  if (maxNewTokens === undefined || task.sampling?.maxTokens !== undefined) return task;
  const queued = clone(GenerateTaskSchema, task);
  queued.sampling ??= create(SamplingParamsSchema);
  queued.sampling.maxTokens = maxNewTokens;
  return queued;
}
