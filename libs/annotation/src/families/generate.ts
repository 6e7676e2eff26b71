import type { AnnotatedFamily } from "../family.js";
import { generateCost, withModelDefaultLength } from "../generate-cost.js";

/**
 * Generation: one part whatever its `n` (its sequences run on one worker, which streams them
 * back together), bucketed by prompt length, costing the bound `n × (prompt + max_tokens)` a
 * worker plans its sequence capacity with.
 */
export const generateFamily: AnnotatedFamily<"generate"> = {
  task: "generate",
  plan(task, ctx) {
    const queued = withModelDefaultLength(task, ctx.model.serving?.maxNewTokens);
    const cost = generateCost(queued, ctx.estimate);
    return {
      estimatedTokens: cost.totalTokens,
      parts: [
        {
          task: { case: "generate", value: queued },
          firstInput: 0,
          maxInputTokens: Math.min(cost.promptTokens, ctx.model.maxInputTokens),
          totalTokens: cost.totalTokens,
        },
      ],
    };
  },
};
