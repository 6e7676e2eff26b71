import type { Context } from "@opentelemetry/api";
import type { Annotate } from "@shoal/annotation";
import type { ModelEntry } from "@shoal/config";
import type { Priority } from "@shoal/proto";
import type { Principal } from "@shoal/tenants";
import type { ModelAccess } from "./access.js";
import { InternalError } from "./errors.js";
import type { BlobOffload, StoredBlob } from "./offload.js";
import type { Submitted, TaskCall, WorkTask } from "./submission.js";
import { withPrompt } from "./embedding-prompt.js";
import { validateEmbed, validateTokenInputs, type EmbedLimits } from "./validate.js";

/** Inputs of one answered request that calibrate the model's token estimate. */
const CALIBRATION_INPUTS = 32;

export interface EmbedCall {
  readonly model: string;
  readonly inputs: readonly string[];
  /**
   * Inputs as token ids of the model's tokenizer, in place of `inputs` (which is then empty);
   * the annotator checks them against the vocabulary.
   */
  readonly tokenInputs?: readonly (readonly number[])[];
  /** @default true */
  readonly truncate?: boolean;
  /** Which of the model's instruction prefixes goes before each text input (`withPrompt`). */
  readonly promptName?: string | undefined;
  readonly priority?: Priority;
  /** Time the client allows, from its own deadline; clamped to `maxTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Refuse at once, with a retry hint, when no copy of the model is resident. */
  readonly noWait?: boolean;
  /** Whom the call acts for: its API key's principal; none on an open cluster. */
  readonly caller?: Principal | undefined;
}

/** Where one request's time went, in microseconds. Parts run in parallel: the slowest counts. */
export interface RequestTimings {
  readonly annotateUs: number;
  readonly queueUs: number;
  readonly batchUs: number;
  readonly computeUs: number;
  readonly totalUs: number;
}

export interface EmbedOutcome {
  readonly requestId: string;
  readonly model: ModelEntry;
  readonly dim: number;
  /** `inputs × dim` float32 little-endian, in input order. */
  readonly embeddings: Uint8Array;
  readonly tokens: readonly number[];
  readonly truncated: readonly boolean[];
  readonly timings: RequestTimings;
}

/** What the embedding family needs from the gateway around it. */
export interface EmbedDeps {
  /** What a call may use (`Gateway.access`). */
  readonly access: (caller: Principal | undefined) => ModelAccess;
  readonly limits: EmbedLimits;
  /** Stores inputs too large for the queue; without it they are refused by `maxInputChars`. */
  readonly offload: BlobOffload | undefined;
  /** The annotator, whose token estimate the answers calibrate. */
  readonly annotator: Annotate;
  /**
   * Refuses the request now if it cannot be admitted (overload, `noWait` and not resident, its
   * tenant over a quota); else returns the admission's release.
   */
  readonly admit: (model: ModelEntry, call: TaskCall) => () => void;
  /** Queues an admitted request and resolves with its answer. */
  readonly submit: (
    model: ModelEntry,
    task: WorkTask,
    call: TaskCall,
    ctx: Context,
  ) => Promise<Submitted>;
}

/**
 * An embedding request from validation to its assembled answer: inputs too large for the queue
 * go to the blob store first (admission is checked before, so an overloaded gateway stores
 * nothing), the parts' rows are joined in input order, and the sidecar's exact token counts
 * calibrate the model's estimate.
 */
export async function embedRequest(
  deps: EmbedDeps,
  request: EmbedCall,
  ctx: Context,
): Promise<EmbedOutcome> {
  const started = performance.now();
  const access = deps.access(request.caller);
  const call = withPrompt(access.model(request.model), request, request.promptName);
  const tokenInputs = call.tokenInputs ?? [];
  const { offload, limits } = deps;
  // Anything too large for the queue goes to the blob store, so no input size between the
  // two limits is refused while larger ones pass.
  const oversized = call.inputs.map(
    (text) =>
      offload !== undefined &&
      (text.length > limits.maxInputChars || Buffer.byteLength(text) > offload.thresholdBytes),
  );
  const model =
    tokenInputs.length > 0
      ? validateTokenInputs(access, call.model, tokenInputs, limits)
      : validateEmbed(access, call.model, call.inputs, limits, (i) => oversized[i] === true);
  const release = deps.admit(model, call);
  try {
    return await embedAdmitted(deps, call, model, oversized, ctx, started);
  } finally {
    release();
  }
}

async function embedAdmitted(
  deps: EmbedDeps,
  call: EmbedCall,
  model: ModelEntry,
  oversized: readonly boolean[],
  ctx: Context,
  started: number,
): Promise<EmbedOutcome> {
  const { offload } = deps;
  const tokenInputs = call.tokenInputs ?? [];
  const blobs =
    offload === undefined ? [] : await storeOversized(offload, call.inputs, oversized, ctx);
  try {
    const offloaded = new Set(blobs.map((b) => b.input));
    const { requestId, assembled, queuedAt } = await deps.submit(
      model,
      {
        case: "embed",
        value: {
          inputs: call.inputs.map((text, i) => (offloaded.has(i) ? "" : text)),
          truncate: call.truncate ?? true,
          tokenInputs: tokenInputs.map((ids) => ({ ids: [...ids] })),
          blobs: blobs.map((b) => ({ ...b, size: BigInt(b.size) })),
        },
      },
      call,
      ctx,
    );
    const parts = assembled.outcomes.map((o) => {
      if (o.case !== "embed")
        throw new InternalError(`an embedding request was answered ${o.case}`);
      return o.value;
    });
    const tokens = parts.flatMap((p) => p.tokens);
    const truncated = parts.flatMap((p) => p.truncated);
    if (tokenInputs.length === 0) {
      // The sidecar's exact counts calibrate the estimate the next requests are queued by. A
      // few inputs a request are plenty for a moving fit, and keep a bulk request from
      // scanning all its text a second time on the way out.
      const estimate = deps.annotator.estimate(model.id);
      const observed = Math.min(call.inputs.length, CALIBRATION_INPUTS);
      for (let i = 0; i < observed; i++) {
        if (offloaded.has(i)) continue;
        estimate.observe(call.inputs[i] ?? "", tokens[i] ?? 0, truncated[i] === true);
      }
    }
    const slowest = (
      pick: (t: NonNullable<(typeof assembled.timings)[number]>) => number,
    ): number => Math.max(0, ...assembled.timings.map((t) => (t === undefined ? 0 : pick(t))));
    return {
      requestId,
      model,
      dim: parts[0]?.dim ?? model.dimensions,
      embeddings: concat(parts.map((p) => p.embeddings)),
      tokens,
      truncated,
      timings: {
        annotateUs: Math.round((queuedAt - started) * 1000),
        queueUs: slowest((t) => t.queueUs),
        batchUs: slowest((t) => t.batchUs),
        computeUs: slowest((t) => t.computeUs),
        totalUs: Math.round((performance.now() - started) * 1000),
      },
    };
  } finally {
    if (offload !== undefined && blobs.length > 0) offload.remove(blobs.map((b) => b.name));
  }
}

/** Stores every oversized input; if one fails, those already stored are removed again. */
async function storeOversized(
  offload: BlobOffload,
  inputs: readonly string[],
  oversized: readonly boolean[],
  ctx: Context,
): Promise<(StoredBlob & { readonly input: number })[]> {
  const stored: (StoredBlob & { readonly input: number })[] = [];
  try {
    for (const [input, text] of inputs.entries()) {
      if (oversized[input] !== true) continue;
      stored.push({ input, ...(await offload.put(Buffer.from(text, "utf8"), ctx)) });
    }
  } catch (err) {
    offload.remove(stored.map((b) => b.name));
    throw err;
  }
  return stored;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
