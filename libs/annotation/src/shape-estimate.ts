/**
 * Token counts from a text's shape, calibrated per model by the exact counts its answers bring
 * back. The gateway never tokenizes: the one real tokenization happens in the sidecar, where
 * its ids feed the model, and its counts come back with every answer. The estimate only sizes
 * queued parts and picks length buckets, so an error costs some padding, never a wrong answer.
 */

/** Tokens a model adds around every input (`[CLS]` and `[SEP]` for BERT encoders). */
const SPECIAL_TOKENS = 2;

/** Calibration weight of one observed input: about the last thousand inputs count. */
const LEARNING_RATE = 1 / 1000;

/**
 * Before any count: WordPiece and BPE vocabularies average about four ASCII characters per
 * token, while scripts without spaces (CJK) take about one per character.
 */
const PRIOR = { ascii: 0.25, other: 1 } as const;

/**
 * How far the fit is held to the prior: the weight of one observation among those averaged,
 * so the prior decides the first estimates and washes out as counts arrive.
 */
const PRIOR_WEIGHT = 1;

/** Tokens per character outside these bounds would be a broken observation, not a tokenizer. */
const BOUNDS = { ascii: [0.02, 2], other: [0.05, 5] } as const;

/** A text's shape: its ASCII characters and its other UTF-16 units. */
export function textShape(text: string): { ascii: number; other: number } {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x80) ascii++;
  return { ascii, other: text.length - ascii };
}

/**
 * One model's estimate: `2 + a × ascii + b × other` tokens, where `a` and `b` are a least-
 * squares fit of the model's real counts over the inputs it answered lately (moving sums, so
 * the fit follows a change of traffic), held towards the prior while it has seen little.
 */
export class ShapeEstimate {
  #ascii: number = PRIOR.ascii;
  #other: number = PRIOR.other;
  #observed = 0;
  // Moving means of the normal equations' terms: x = (ascii, other), y = real tokens − 2.
  #xx = [0, 0, 0];
  #xy = [0, 0];

  /** Estimated tokens of `text`, special tokens included, before truncation. */
  count(text: string): number {
    const { ascii, other } = textShape(text);
    return SPECIAL_TOKENS + Math.ceil(this.#ascii * ascii + this.#other * other);
  }

  /** How many real counts have calibrated it. */
  get observed(): number {
    return this.#observed;
  }

  /** Tokens per ASCII character and per other character, as fitted now. */
  get rates(): { readonly ascii: number; readonly other: number } {
    return { ascii: this.#ascii, other: this.#other };
  }

  /**
   * Learns from an answered input: `tokens` is the sidecar's count, special tokens included.
   * Truncated inputs say only that the text was at least that long, so they are not used.
   */
  observe(text: string, tokens: number, truncated: boolean): void {
    const { ascii, other } = textShape(text);
    const y = tokens - SPECIAL_TOKENS;
    if (truncated || ascii + other === 0 || y <= 0) return;
    // An observation no rate within bounds could explain is dropped, not averaged in.
    const most = BOUNDS.ascii[1] * ascii + BOUNDS.other[1] * other;
    const least = BOUNDS.ascii[0] * ascii + BOUNDS.other[0] * other;
    if (y > most || y < least) return;
    this.#observed++;
    // The first observations move it fast; later ones average over the recent window.
    const r = Math.max(LEARNING_RATE, 1 / this.#observed);
    const x = [ascii, other] as const;
    const xx = this.#xx;
    xx[0] = (xx[0] ?? 0) + r * (x[0] * x[0] - (xx[0] ?? 0));
    xx[1] = (xx[1] ?? 0) + r * (x[0] * x[1] - (xx[1] ?? 0));
    xx[2] = (xx[2] ?? 0) + r * (x[1] * x[1] - (xx[2] ?? 0));
    this.#xy[0] = (this.#xy[0] ?? 0) + r * (x[0] * y - (this.#xy[0] ?? 0));
    this.#xy[1] = (this.#xy[1] ?? 0) + r * (x[1] * y - (this.#xy[1] ?? 0));
    this.#fit();
  }

  /** Solves the 2×2 normal equations with a ridge towards the prior. */
  #fit(): void {
    const [s11 = 0, s12 = 0, s22 = 0] = this.#xx;
    const [s1y = 0, s2y = 0] = this.#xy;
    const weight = PRIOR_WEIGHT * Math.max(LEARNING_RATE, 1 / this.#observed);
    const l1 = weight * s11 + 1e-9;
    const l2 = weight * s22 + 1e-9;
    const a11 = s11 + l1;
    const a22 = s22 + l2;
    const b1 = s1y + l1 * PRIOR.ascii;
    const b2 = s2y + l2 * PRIOR.other;
    const det = a11 * a22 - s12 * s12;
    if (!(det > 0)) return;
    this.#ascii = clamp((b1 * a22 - s12 * b2) / det, BOUNDS.ascii);
    this.#other = clamp((a11 * b2 - s12 * b1) / det, BOUNDS.other);
  }
}

function clamp(value: number, [low, high]: readonly [number, number]): number {
  return Math.min(high, Math.max(low, value));
}

/** The estimates of every model, by catalog id. */
export class ShapeEstimates {
  readonly #models = new Map<string, ShapeEstimate>();

  of(modelId: string): ShapeEstimate {
    let estimate = this.#models.get(modelId);
    if (estimate === undefined) {
      estimate = new ShapeEstimate();
      this.#models.set(modelId, estimate);
    }
    return estimate;
  }
}
