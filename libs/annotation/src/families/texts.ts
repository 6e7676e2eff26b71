import type { AnnotatedFamily, FamilyPlan, ItemTask, PlanContext } from "../family.js";
import { planParts } from "../plan.js";

/**
 * Cuts a list of texts into parts by their estimated tokens and bytes; `slice` makes a part's
 * task from the range of texts it holds. Every family whose task is a list of texts (embed,
 * rerank documents, classify, extract) queues through this.
 */
export function planTexts(
  texts: readonly string[],
  counts: readonly number[],
  ctx: PlanContext,
  slice: (first: number, end: number) => ItemTask,
): FamilyPlan {
  const plan = planParts(
    counts,
    ctx.limits,
    texts.map((t) => Buffer.byteLength(t)),
  );
  return {
    estimatedTokens: plan.totalTokens,
    parts: plan.parts.map((part) => ({
      task: slice(part.firstInput, part.firstInput + part.inputs),
      firstInput: part.firstInput,
      maxInputTokens: part.maxInputTokens,
      totalTokens: part.totalTokens,
    })),
  };
}

/**
 * A family whose task is `{ inputs, truncate }` and whose inputs cost their own tokens
 * (classify, extract).
 */
export function textListFamily<C extends "classify" | "extract">(task: C): AnnotatedFamily<C> {
  return {
    task,
    plan(value, ctx) {
      const counts = value.inputs.map((t) => ctx.estimate.count(t));
      return planTexts(value.inputs, counts, ctx, (first, end) => ({
        case: task,
        value: { ...value, inputs: value.inputs.slice(first, end) },
      }));
    },
  };
}
