import { create } from "@bufbuild/protobuf";
import { EmbedResultSchema } from "@shoal/proto";
import type { SidecarClient } from "@shoal/sidecar-client";
import { traceparentOf } from "@shoal/telemetry";
import type { Answer } from "./answers.js";
import type { FamilyBatch, FamilyBatchContext, FamilyBatchResult } from "./family-batch.js";
import { overLengthAnswer } from "./over-length.js";
import { itemTimings } from "./timings.js";

/**
 * Runs a batch for an embedding model — one sidecar `embed` over every item's texts — and
 * gives each item its rows of the result, as the raw float32 bytes the answer carries.
 */
export async function runEmbedBatch(
  sidecar: SidecarClient,
  fc: FamilyBatchContext,
  batch: FamilyBatch,
): Promise<FamilyBatchResult> {
  const { model } = fc;
  const inputs = batch.items.flatMap(({ p }) => p.inputTexts);
  const result = await sidecar.embed({
    model: model.key,
    inputs,
    truncate: true,
    timeoutMs: fc.batchTimeoutMs,
    traceparents: batch.items
      .map(({ ctx }) => traceparentOf(ctx))
      .filter((t): t is string => t !== undefined),
  });
  const rowBytes = result.dim * 4;
  const times = {
    startedUs: batch.startedUs,
    computeUs: result.computeUs,
    batchItems: inputs.length,
    batchTokens: batch.batchTokens,
  };
  const answers: Answer[] = [];
  let row = 0;
  for (const { p } of batch.items) {
    const n = p.inputs;
    const truncated = result.truncated.slice(row, row + n);
    const refused = overLengthAnswer(p, truncated, model);
    answers.push({
      item: p.item,
      outcome: refused ?? {
        case: "embed",
        value: create(EmbedResultSchema, {
          dim: result.dim,
          embeddings: result.embeddings.subarray(row * rowBytes, (row + n) * rowBytes),
          tokens: result.tokens.slice(row, row + n),
          truncated,
        }),
      },
      timings: refused ? undefined : itemTimings(p, times),
    });
    row += n;
  }
  return {
    answers,
    observation: {
      sequences: inputs.length,
      paddedTokens: inputs.length * Math.max(1, ...result.tokens),
      micros: result.computeUs,
    },
  };
}
