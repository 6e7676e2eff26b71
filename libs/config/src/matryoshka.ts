import { ConfigError } from "./errors.js";

/**
 * A catalog entry's `matryoshkaDimensions`: the output widths below its native `dimensions`
 * that the model was trained to be cut to (Matryoshka Representation Learning,
 * https://arxiv.org/abs/2205.13147), e.g. `[64, 128, 256, 512]` for nomic-embed-text-v1.5.
 * Cutting a model not trained that way (MiniLM) gives a vector whose first coordinates carry no
 * special meaning, so a request for `dimensions` is refused unless the catalog lists the width.
 * Absent: the model serves its native width only.
 */
export function compileMatryoshkaDimensions(
  raw: unknown,
  native: number,
  where: string,
): readonly number[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new ConfigError(`${where} must be a non-empty array of integers`);
  }
  const widths = raw.map((w: unknown, i) => {
    if (typeof w !== "number" || !Number.isInteger(w) || w < 1 || w >= native) {
      throw new ConfigError(`${where}[${i}] must be an integer in 1..${native - 1}`);
    }
    return w;
  });
  if (new Set(widths).size !== widths.length) {
    throw new ConfigError(`${where} lists a width twice`);
  }
  return [...widths].sort((a, b) => a - b);
}
