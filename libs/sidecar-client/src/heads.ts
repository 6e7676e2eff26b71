import { Fields } from "./fields.js";
import type { FrameBody } from "./frame.js";
import type { CallOptions } from "./call-options.js";
import { SidecarProtocolError } from "./sidecar-protocol-error.js";

/**
 * The non-generative heads: cross-encoder `score`, sequence `classify` and token-classification
 * `extract` (docs/sidecar-protocol.md). Each answers per input (or pair) with the token
 * accounting `embed` has, checked against the request so results never misalign downstream.
 */

/** Arguments of {@link SidecarClient.score}: pair `i` is `(queries[i], documents[i])`. */
export interface ScoreRequest extends CallOptions {
  /** A resident `rerank` model. */
  readonly model: string;
  readonly queries: readonly string[];
  /** Same length as `queries`. */
  readonly documents: readonly string[];
  /** Cut over-long pairs (longer side first) or refuse them; unset, the sidecar's `true`. */
  readonly truncate?: boolean;
  readonly traceparents?: readonly string[];
}

/** Arguments of {@link SidecarClient.classify} and {@link SidecarClient.extract}. */
export interface TextsRequest extends CallOptions {
  /** A resident `classify` (or `extract`) model. */
  readonly model: string;
  readonly inputs: readonly string[];
  readonly truncate?: boolean;
  readonly traceparents?: readonly string[];
}

/** What every head reports per input besides its answer. */
export interface HeadAccounting {
  readonly count: number;
  /** Tokens per input (pair) after truncation, special tokens included. */
  readonly tokens: number[];
  readonly truncated: boolean[];
  readonly queueUs: number;
  readonly computeUs: number;
}

/** Answer to `score`. */
export interface ScoreResult extends HeadAccounting {
  /** `count` f32 little-endian relevance scores, exactly as sent; read with `toFloat32Array`. */
  readonly scores: Uint8Array;
}

/** Answer to `classify`. */
export interface ClassifyResult extends HeadAccounting {
  /** The model's labels in id order. */
  readonly labels: string[];
  /** `count × labels.length` f32 little-endian, row-major. */
  readonly probabilities: Uint8Array;
}

/** One entity found by `extract`; offsets in Unicode code points, end exclusive. */
export interface ExtractedEntity {
  /** Entity type without its `B-`/`I-` prefix. */
  readonly label: string;
  readonly text: string;
  readonly start: number;
  readonly end: number;
  /** Mean probability of the entity's tokens. */
  readonly score: number;
}

/** Answer to `extract`. */
export interface ExtractResult extends HeadAccounting {
  /** One list per input, in input order. */
  readonly entities: ExtractedEntity[][];
}

function accounting(f: Fields, what: string, sent: number): HeadAccounting {
  const count = f.uint("count");
  const tokens = f.uintArray("tokens");
  const truncated = f.booleanArray("truncated");
  if (count !== sent) {
    throw new SidecarProtocolError(`${what}: count ${count} differs from ${sent} inputs sent`);
  }
  if (tokens.length !== count || truncated.length !== count) {
    throw new SidecarProtocolError(
      `${what}: tokens (${tokens.length}) and truncated (${truncated.length}) must both have count = ${count} entries`,
    );
  }
  return { count, tokens, truncated, queueUs: f.uint("queue_us"), computeUs: f.uint("compute_us") };
}

export function parseScore(body: FrameBody, pairs: number): ScoreResult {
  const f = new Fields(body, "score response");
  const scores = f.bin("scores");
  const head = accounting(f, "score response", pairs);
  if (scores.byteLength !== head.count * 4) {
    throw new SidecarProtocolError(
      `score response: scores hold ${scores.byteLength} bytes, expected count × 4 = ${head.count * 4}`,
    );
  }
  return { ...head, scores };
}

export function parseClassify(body: FrameBody, inputs: number): ClassifyResult {
  const f = new Fields(body, "classify response");
  const labels = f.stringArray("labels");
  const probabilities = f.bin("probabilities");
  const head = accounting(f, "classify response", inputs);
  if (labels.length === 0) throw new SidecarProtocolError("classify response: no labels");
  const expected = head.count * labels.length * 4;
  if (probabilities.byteLength !== expected) {
    throw new SidecarProtocolError(
      `classify response: probabilities hold ${probabilities.byteLength} bytes, expected count × labels × 4 = ${expected}`,
    );
  }
  return { ...head, labels, probabilities };
}

export function parseExtract(body: FrameBody, inputs: number): ExtractResult {
  const f = new Fields(body, "extract response");
  const entities = f.arrayOfMapArrays("entities").map((row) =>
    row.map((e) => {
      const start = e.uint("start");
      const end = e.uint("end");
      if (end < start) {
        throw new SidecarProtocolError(
          `extract response: entity ends (${end}) before it starts (${start})`,
        );
      }
      return {
        label: e.string("label"),
        text: e.string("text"),
        start,
        end,
        score: e.number("score"),
      };
    }),
  );
  const head = accounting(f, "extract response", inputs);
  if (entities.length !== head.count) {
    throw new SidecarProtocolError(
      `extract response: ${entities.length} entity lists for count = ${head.count}`,
    );
  }
  return { ...head, entities };
}
