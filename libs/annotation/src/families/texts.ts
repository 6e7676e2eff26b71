import type { AnnotatedFamily, FamilyPlan, ItemTask, PlanContext } from "../family.js";
import { planParts } from "../plan.js";

/** Each text's UTF-8 size, what it takes in a queued part. */
export function textBytes(texts: readonly string[]): number[] {
  return texts.map((t) => Buffer.byteLength(t));
}

/**
 * Cuts a list of inputs into parts by their estimated tokens and bytes; `slice` makes a part's
 * task from the range of inputs it holds. Every family whose task is a list of inputs (embed,
 * rerank documents, classify, extract) queues through this.
 */
export function planTexts(
  counts: readonly number[],
  bytes: readonly number[],
  ctx: PlanContext,
  slice: (first: number, end: number) => ItemTask,
): FamilyPlan {
  const plan = planParts(counts, ctx.limits, bytes);
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
      return planTexts(counts, textBytes(value.inputs), ctx, (first, end) => ({
        case: task,
        value: { ...value, inputs: value.inputs.slice(first, end) },
      }));
    },
  };
}
