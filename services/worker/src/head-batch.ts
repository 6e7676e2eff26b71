import { create } from "@bufbuild/protobuf";
import { ClassifyResultSchema, ExtractResultSchema, ScoreResultSchema } from "@shoal/proto";
import { toFloat32Array, type SidecarClient } from "@shoal/sidecar-client";
import { traceparentOf } from "@shoal/telemetry";
import { overLengthAnswer } from "./over-length.js";
import type { Answer, AnswerOutcome } from "./answers.js";
import type { FamilyBatch, FamilyBatchContext, FamilyBatchResult } from "./family-batch.js";
import { itemTimings } from "./timings.js";

/**
 * Runs a batch for a rerank, classify or extract model — one sidecar call over every item's
 * texts, as embeddings run — and gives each item its part of the result.
 */
export async function runHeadBatch(
  sidecar: SidecarClient,
  hc: FamilyBatchContext,
  batch: FamilyBatch,
): Promise<FamilyBatchResult> {
  const { items, startedUs, batchTokens } = batch;
  const texts = items.flatMap(({ p }) => p.inputTexts);
  const traceparents = items
    .map(({ ctx }) => traceparentOf(ctx))
    .filter((t): t is string => t !== undefined);
  const common = {
    model: hc.model.key,
    truncate: true,
    timeoutMs: hc.batchTimeoutMs,
    traceparents,
  };
  let computeUs: number;
  let tokens: number[];
  let truncated: boolean[];
  let answer: (row: number, n: number) => AnswerOutcome;
  if (hc.model.family === "reranker") {
    const queries = items.flatMap(({ p }) => p.inputTexts.map(() => p.query ?? ""));
    const r = await sidecar.score({ ...common, queries, documents: texts });
    const scores = toFloat32Array(r.scores);
    ({ computeUs, tokens, truncated } = r);
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
    ({ computeUs, tokens, truncated } = r);
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
    ({ computeUs, tokens, truncated } = r);
    answer = (row, n) => ({
      case: "extract",
      value: create(ExtractResultSchema, {
        results: r.entities.slice(row, row + n).map((entities) => ({ entities })),
        tokens: r.tokens.slice(row, row + n),
        truncated: r.truncated.slice(row, row + n),
      }),
    });
  }
  const times = { startedUs, computeUs, batchItems: texts.length, batchTokens };
  let row = 0;
  const answers: Answer[] = items.map(({ p }) => {
    const n = p.inputs;
    const refused = overLengthAnswer(p, truncated.slice(row, row + n), hc.model);
    const outcome = refused ?? answer(row, n);
    row += n;
    return { item: p.item, outcome, timings: refused ? undefined : itemTimings(p, times) };
  });
  return {
    answers,
    observation: {
      sequences: texts.length,
      paddedTokens: texts.length * Math.max(1, ...tokens),
      micros: computeUs,
    },
  };
}
