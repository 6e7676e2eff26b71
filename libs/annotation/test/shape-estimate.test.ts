import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { ShapeEstimate } from "../src/index.js";

interface FixtureSentence {
  readonly text: string;
  readonly tokens: number;
  readonly truncated: boolean;
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json"), "utf8"),
) as { sentences: FixtureSentence[]; max_seq_length: number };

describe("the shape estimate against sentence-transformers' counts", () => {
  const usable = fixture.sentences.filter((x) => x.text.trim().length > 20 && !x.truncated);

  it("is the right order of magnitude before any calibration", () => {
    const estimate = new ShapeEstimate();
    for (const s of usable) {
      const ratio = estimate.count(s.text) / s.tokens;
      expect(ratio, s.text.slice(0, 40)).toBeGreaterThan(0.25);
      expect(ratio, s.text.slice(0, 40)).toBeLessThan(4);
    }
  });

  it("comes closer to the real counts once the sidecar's counts have calibrated it", () => {
    // Calibrate on every other sentence, judge on the rest.
    const learn = usable.filter((_, i) => i % 2 === 0);
    const judge = usable.filter((_, i) => i % 2 === 1);
    const error = (e: ShapeEstimate): number =>
      judge.reduce((sum, s) => sum + Math.abs(e.count(s.text) - s.tokens), 0) /
      judge.reduce((sum, s) => sum + s.tokens, 0);
    const estimate = new ShapeEstimate();
    const before = error(estimate);
    for (let round = 0; round < 20; round++) {
      for (const s of learn) estimate.observe(s.text, s.tokens, false);
    }
    expect(estimate.observed).toBe(20 * learn.length);
    expect(error(estimate)).toBeLessThan(before);
  });
});
