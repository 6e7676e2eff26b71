import { ErrorCode } from "@shoal/proto";
import type { AnnotatedFamily } from "../family.js";
import { tokenInputsError } from "../token-inputs.js";
import { planTexts, textBytes } from "./texts.js";

/** Special tokens a model puts around an input (`[CLS]`, `[SEP]`): an estimate, as all here. */
const SPECIAL_TOKENS = 2;

/**
 * Embeddings: texts or token ids cut into parts. Token ids are checked against the vocabulary
 * and queued as they are; the sidecar takes them without tokenizing. An offloaded input is only
 * a reference here; its size gives its estimate (at the model's maximum for any text over the
 * offload threshold).
 */
export const embedFamily: AnnotatedFamily<"embed"> = {
  task: "embed",
  async plan(task, ctx) {
    const { truncate, tokenInputs, blobs } = task;
    if (tokenInputs.length > 0) {
      const error = tokenInputsError(tokenInputs, await ctx.vocabSize(), ctx.model.id);
      if (error !== undefined)
        return { error: { code: ErrorCode.INVALID_ARGUMENT, message: error } };
      // Ids past the model's limit are never computed. As many as the limit are kept, more
      // than fit beside the special tokens, so the sidecar still sees (and reports, or
      // refuses) the cut.
      const kept = tokenInputs.map(({ ids }) => ({ ids: ids.slice(0, ctx.model.maxInputTokens) }));
      const counts = kept.map(({ ids }) =>
        Math.min(ids.length + SPECIAL_TOKENS, ctx.model.maxInputTokens),
      );
      // A varint id takes at most 5 bytes on the wire.
      const bytes = kept.map(({ ids }) => 5 * ids.length);
      return planTexts(counts, bytes, ctx, (first, end) => ({
        case: "embed",
        value: { inputs: [], truncate, tokenInputs: kept.slice(first, end), blobs: [] },
      }));
    }
    const { inputs } = task;
    const blobSizes = new Map(blobs.map((b) => [b.input, Number(b.size)]));
    const counts = inputs.map((text, i) => {
      const size = blobSizes.get(i);
      return size === undefined ? ctx.estimate.count(text) : 2 + Math.ceil(size / 4);
    });
    return planTexts(counts, textBytes(inputs), ctx, (first, end) => ({
      case: "embed",
      value: {
        inputs: inputs.slice(first, end),
        truncate,
        tokenInputs: [],
        blobs: blobs
          .filter((b) => b.input >= first && b.input < end)
          .map((b) => ({ ...b, input: b.input - first })),
      },
    }));
  },
};
