import { create } from "@bufbuild/protobuf";
import type { EmbedOutcome } from "@shoal/gateway";
import { EmbedResponseSchema, EmbeddingSchema, type EmbedResponse } from "@shoal/proto";
import { packedFloats } from "./packed-floats.js";

/** `Embedding.values`' field number, whose packed floats binary answers write raw. */
const EMBEDDING_VALUES_FIELD = EmbeddingSchema.field.values.number;

/**
 * The `EmbedResponse` for an outcome. `binary`: it will be encoded as binary protobuf, so each
 * vector's bytes go out as its field's raw record (see packed-floats.ts); otherwise (JSON) as
 * numbers.
 */
export function embedResponse(outcome: EmbedOutcome, binary: boolean): EmbedResponse {
  const rowBytes = outcome.dim * 4;
  const values = binary ? undefined : new Float32Array(outcome.tokens.length * outcome.dim);
  if (values !== undefined) new Uint8Array(values.buffer).set(outcome.embeddings);
  const tokens = outcome.tokens.reduce((n, t) => n + t, 0);
  return create(EmbedResponseSchema, {
    model: outcome.model.id,
    embeddings: outcome.tokens.map((t, i) => {
      const embedding = create(EmbeddingSchema, {
        tokens: t,
        truncated: outcome.truncated[i] ?? false,
      });
      if (values === undefined) {
        const row = outcome.embeddings.subarray(i * rowBytes, (i + 1) * rowBytes);
        embedding.$unknown = [packedFloats(EMBEDDING_VALUES_FIELD, row)];
      } else {
        embedding.values = Array.from(values.subarray(i * outcome.dim, (i + 1) * outcome.dim));
      }
      return embedding;
    }),
    usage: { inputTokens: tokens, outputTokens: 0 },
  });
}
