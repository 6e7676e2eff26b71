import { create } from "@bufbuild/protobuf";
import { ClassifyResultSchema, ExtractResultSchema, ScoreResultSchema } from "@shoal/proto";
import { toFloat32Array, type SidecarClient } from "@shoal/sidecar-client";
import type { AnswerOutcome } from "./answers.js";
import {
  answerRows,
  batchTraceparents,
  type FamilyBatch,
  type FamilyBatchContext,
  type FamilyBatchResult,
  type RowCounts,
} from "./family-batch.js";

/**
 * Runs a batch for a rerank, classify or extract model — one sidecar call over every item's
 * texts, as embeddings run — and gives each item its part of the result.
 */
export async function runHeadBatch(
  sidecar: SidecarClient,
  hc: FamilyBatchContext,
  batch: FamilyBatch,
): Promise<FamilyBatchResult> {
  const { items } = batch;
  const texts = items.flatMap(({ p }) => p.inputTexts);
  const common = {
    model: hc.model.key,
    truncate: true,
    timeoutMs: hc.batchTimeoutMs,
    traceparents: batchTraceparents(batch),
  };
  let counts: RowCounts;
  let answer: (row: number, n: number) => AnswerOutcome;
  if (hc.model.family === "reranker") {
    const queries = items.flatMap(({ p }) => p.inputTexts.map(() => p.query ?? ""));
    const r = await sidecar.score({ ...common, queries, documents: texts });
    const scores = toFloat32Array(r.scores);
    counts = r;
    answer = (row, n) => ({
      case: "score",
      value: create(ScoreResultSchema, {
        scores: Array.from(scores.subarray(row, row + n)),
        tokens: r.tokens.slice(row, row + n),
        truncated: r.truncated.slice(row, row + n),
      }),
    });
  } else if (hc.model.family === "sequence-classifier") {
    const r = await sidecar.classify({ ...common, inputs: texts });
    const probabilities = toFloat32Array(r.probabilities);
    const width = r.labels.length;
    counts = r;
    answer = (row, n) => ({
      case: "classify",
      value: create(ClassifyResultSchema, {
        labels: r.labels,
        probabilities: Array.from(probabilities.subarray(row * width, (row + n) * width)),
        tokens: r.tokens.slice(row, row + n),
        truncated: r.truncated.slice(row, row + n),
      }),
    });
  } else {
    const r = await sidecar.extract({ ...common, inputs: texts });
    counts = r;
    answer = (row, n) => ({
      case: "extract",
      value: create(ExtractResultSchema, {
        results: r.entities.slice(row, row + n).map((entities) => ({ entities })),
        tokens: r.tokens.slice(row, row + n),
        truncated: r.truncated.slice(row, row + n),
      }),
    });
  }
  return answerRows(hc, batch, counts, answer);
}
