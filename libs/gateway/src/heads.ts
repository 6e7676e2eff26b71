import type { Context } from "@opentelemetry/api";
import type { ModelEntry } from "@shoal/config";
import type { ClassifyResult, ExtractResult, Priority, ScoreResult } from "@shoal/proto";
import type { Principal } from "@shoal/tenants";
import type { ModelAccess } from "./access.js";
import { InternalError, InvalidArgumentError } from "./errors.js";
import type { Gateway } from "./gateway.js";
import type { PartOutcome } from "./pending.js";

/** Limits on rerank and extract requests, checked before anything is queued. */
export interface HeadLimits {
  /** Documents per rerank, inputs per extract. @default 1000 */
  readonly maxInputs: number;
  /** Longest query, document or input, UTF-16 code units. @default 100_000 */
  readonly maxInputChars: number;
}

export const DEFAULT_HEAD_LIMITS: HeadLimits = Object.freeze({
  maxInputs: 1000,
  maxInputChars: 100_000,
});

interface Common {
  readonly model: string;
  /** @default true */
  readonly truncate?: boolean;
  readonly priority?: Priority;
  readonly timeoutMs?: number;
  /** Refuse at once, with a retry hint, when no copy of the model is resident. */
  readonly noWait?: boolean;
  /** Whom the call acts for: its API key's principal; none on an open cluster. */
  readonly caller?: Principal | undefined;
}

export interface RerankCall extends Common {
  readonly query: string;
  readonly documents: readonly string[];
}

export interface RerankOutcome {
  readonly requestId: string;
  readonly model: ModelEntry;
  /** One per document, in document order. */
  readonly scores: readonly number[];
  /** Tokens of each (query, document) pair after truncation. */
  readonly tokens: readonly number[];
}

export interface ExtractCall extends Common {
  readonly inputs: readonly string[];
}

export interface ExtractedEntity {
  readonly label: string;
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly score: number;
}

export interface ExtractOutcome {
  readonly requestId: string;
  readonly model: ModelEntry;
  /** `entities` for token classifiers (NER), `labels` for sequence classifiers. */
  readonly kind: "entities" | "labels";
  /** One per input, in input order. */
  readonly results: readonly {
    readonly entities: readonly ExtractedEntity[];
    /** Sorted by probability, highest first. */
    readonly labels: readonly { readonly label: string; readonly probability: number }[];
  }[];
  readonly tokens: readonly number[];
}

function model(
  access: ModelAccess,
  id: string,
  families: readonly string[],
  what: string,
): ModelEntry {
  const entry = access.model(id);
  if (!families.includes(entry.family)) {
    throw new InvalidArgumentError(`model "${id}" is of family "${entry.family}", not ${what}`);
  }
  return entry;
}

/** `allowEmpty`: an empty text has no entities and still a label, so extract takes it. */
function texts(
  name: string,
  values: readonly string[],
  limits: HeadLimits,
  allowEmpty = false,
): void {
  if (values.length === 0) throw new InvalidArgumentError(`${name} must not be empty`);
  if (values.length > limits.maxInputs) {
    throw new InvalidArgumentError(
      `at most ${limits.maxInputs} ${name} per request, got ${values.length}`,
    );
  }
  values.forEach((text, i) => {
    if (text.length === 0 && !allowEmpty) {
      throw new InvalidArgumentError(`${name}[${i}] is an empty string`);
    }
    if (text.length > limits.maxInputChars) {
      throw new InvalidArgumentError(
        `${name}[${i}] is longer than ${limits.maxInputChars} characters`,
      );
    }
  });
}

/** Scores every document against the query with a cross-encoder, in document order. */
export async function rerank(
  gateway: Gateway,
  call: RerankCall,
  ctx: Context,
  limits: HeadLimits = DEFAULT_HEAD_LIMITS,
): Promise<RerankOutcome> {
  const entry = model(gateway.access(call.caller), call.model, ["reranker"], "a reranker");
  if (call.query.length === 0) throw new InvalidArgumentError("query must not be empty");
  if (call.query.length > limits.maxInputChars) {
    throw new InvalidArgumentError(`query is longer than ${limits.maxInputChars} characters`);
  }
  texts("documents", call.documents, limits);
  const { requestId, assembled } = await gateway.submit(
    entry,
    {
      case: "score",
      value: { query: call.query, documents: [...call.documents], truncate: call.truncate ?? true },
    },
    call,
    ctx,
  );
  const parts = assembled.outcomes.map(scoreOf);
  const scores = parts.flatMap((p) => p.scores);
  if (scores.length !== call.documents.length) {
    throw new InternalError(
      `workers scored ${scores.length} of ${call.documents.length} documents`,
    );
  }
  return { requestId, model: entry, scores, tokens: parts.flatMap((p) => p.tokens) };
}

/** Entities (token classifiers) or labels (sequence classifiers) for every input. */
export async function extract(
  gateway: Gateway,
  call: ExtractCall,
  ctx: Context,
  limits: HeadLimits = DEFAULT_HEAD_LIMITS,
): Promise<ExtractOutcome> {
  const entry = model(
    gateway.access(call.caller),
    call.model,
    ["token-classifier", "sequence-classifier"],
    "a token or sequence classifier",
  );
  texts("inputs", call.inputs, limits, true);
  const kind = entry.family === "token-classifier" ? "extract" : "classify";
  const { requestId, assembled } = await gateway.submit(
    entry,
    { case: kind, value: { inputs: [...call.inputs], truncate: call.truncate ?? true } },
    call,
    ctx,
  );
  const results: ExtractOutcome["results"][number][] = [];
  const tokens: number[] = [];
  for (const outcome of assembled.outcomes) {
    if (kind === "extract") {
      const part = extractOf(outcome);
      for (const r of part.results) {
        results.push({
          entities: r.entities.map((e) => ({
            label: e.label,
            text: e.text,
            start: e.start,
            end: e.end,
            score: e.score,
          })),
          labels: [],
        });
      }
      tokens.push(...part.tokens);
    } else {
      const part = classifyOf(outcome);
      const width = part.labels.length;
      for (let row = 0; row * width < part.probabilities.length; row++) {
        const labels = part.labels
          .map((label, i) => ({ label, probability: part.probabilities[row * width + i] ?? 0 }))
          .sort((a, b) => b.probability - a.probability);
        results.push({ entities: [], labels });
      }
      tokens.push(...part.tokens);
    }
  }
  if (results.length !== call.inputs.length) {
    throw new InternalError(`workers answered ${results.length} of ${call.inputs.length} inputs`);
  }
  return {
    requestId,
    model: entry,
    kind: kind === "extract" ? "entities" : "labels",
    results,
    tokens,
  };
}

function scoreOf(o: PartOutcome): ScoreResult {
  if (o.case !== "score") throw new InternalError(`worker answered ${o.case} for score`);
  return o.value;
}

function classifyOf(o: PartOutcome): ClassifyResult {
  if (o.case !== "classify") throw new InternalError(`worker answered ${o.case} for classify`);
  return o.value;
}

function extractOf(o: PartOutcome): ExtractResult {
  if (o.case !== "extract") throw new InternalError(`worker answered ${o.case} for extract`);
  return o.value;
}
