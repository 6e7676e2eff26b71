import { create } from "@bufbuild/protobuf";
import { EmbedResultSchema } from "@shoal/proto";
import type { SidecarClient } from "@shoal/sidecar-client";
import {
  answerRows,
  batchTraceparents,
  type FamilyBatch,
  type FamilyBatchContext,
  type FamilyBatchResult,
} from "./family-batch.js";

/**
 * Runs a batch for an embedding model — one sidecar `embed` over every item's texts or token
 * ids, side by side — and gives each item its rows of the result, as the raw float32 bytes the
 * answer carries.
 */
export async function runEmbedBatch(
  sidecar: SidecarClient,
  fc: FamilyBatchContext,
  batch: FamilyBatch,
): Promise<FamilyBatchResult> {
  const result = await sidecar.embed({
    model: fc.model.key,
    inputs: batch.items.flatMap(
      ({ p }): readonly (string | readonly number[])[] => p.tokenIds ?? p.inputTexts,
    ),
    truncate: true,
    timeoutMs: fc.batchTimeoutMs,
    traceparents: batchTraceparents(batch),
  });
  const rowBytes = result.dim * 4;
  return answerRows(fc, batch, result, (row, n) => ({
    case: "embed",
    value: create(EmbedResultSchema, {
      dim: result.dim,
      embeddings: result.embeddings.subarray(row * rowBytes, (row + n) * rowBytes),
      tokens: result.tokens.slice(row, row + n),
      truncated: result.truncated.slice(row, row + n),
    }),
  }));
}
