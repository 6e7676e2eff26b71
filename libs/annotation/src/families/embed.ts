import { ErrorCode } from "@shoal/proto";
import type { AnnotatedFamily } from "../family.js";
import { decodeTokenInputs } from "../token-inputs.js";
import { planTexts } from "./texts.js";

/**
 * Embeddings: texts (or token ids, turned into text with the model's tokenizer) cut into parts.
 * An offloaded input is only a reference here; its size gives its estimate (at the model's
 * maximum for any text over the offload threshold).
 */
export const embedFamily: AnnotatedFamily<"embed"> = {
  task: "embed",
  async plan(task, ctx) {
    const { truncate, tokenInputs, blobs } = task;
    let inputs = task.inputs;
    if (tokenInputs.length > 0) {
      const decoded = decodeTokenInputs(tokenInputs, await ctx.tokenizer(), ctx.model.id);
      if ("error" in decoded) {
        return { error: { code: ErrorCode.INVALID_ARGUMENT, message: decoded.error } };
      }
      inputs = decoded.texts;
    }
    const blobSizes = new Map(blobs.map((b) => [b.input, Number(b.size)]));
    const counts = inputs.map((text, i) => {
      const size = blobSizes.get(i);
      return size === undefined ? ctx.estimate.count(text) : 2 + Math.ceil(size / 4);
    });
    return planTexts(inputs, counts, ctx, (first, end) => ({
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
