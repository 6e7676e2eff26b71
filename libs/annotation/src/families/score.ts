import type { AnnotatedFamily } from "../family.js";
import { planTexts, textBytes } from "./texts.js";

/**
 * Rerank: each document is scored against the query as `[CLS] query [SEP] document [SEP]`, so
 * its cost is both texts' tokens less the one `[CLS]` they share.
 */
export const scoreFamily: AnnotatedFamily<"score"> = {
  task: "score",
  plan(task, ctx) {
    const query = ctx.estimate.count(task.query);
    const counts = task.documents.map((d) => query + ctx.estimate.count(d) - 1);
    return planTexts(counts, textBytes(task.documents), ctx, (first, end) => ({
      case: "score",
      value: {
        query: task.query,
        documents: task.documents.slice(first, end),
        truncate: task.truncate,
      },
    }));
  },
};
