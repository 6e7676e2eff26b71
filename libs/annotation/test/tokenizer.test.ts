import { readFileSync } from "node:fs";
import { join } from "node:path";
import { minilmDir, repoRoot } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { loadTokenizer, ShapeEstimate } from "../src/index.js";

interface FixtureSentence {
  readonly text: string;
  readonly tokens: number;
  readonly truncated: boolean;
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json"), "utf8"),
) as { sentences: FixtureSentence[]; max_seq_length: number };

describe("the model's tokenizer, as the gateway loads it", () => {
  it("counts exactly what sentence-transformers counted, for every fixture sentence", async () => {
    const tokenizer = await loadTokenizer(minilmDir());
    for (const s of fixture.sentences) {
      const counted = tokenizer.count(s.text);
      expect(Math.min(counted, fixture.max_seq_length), s.text.slice(0, 40)).toBe(s.tokens);
      expect(counted > fixture.max_seq_length, s.text.slice(0, 40)).toBe(s.truncated);
    }
  });
});

describe("the shape estimate against the reference tokenizer", () => {
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

describe("decoding token ids", () => {
  it("gives back text that encodes to the same ids, for every fixture sentence", async () => {
    const tokenizer = await loadTokenizer(minilmDir());
    const hfTokenizer = await referenceTokenizer();
    expect(tokenizer.vocabSize).toBe(30522);
    for (const s of fixture.sentences) {
      const ids = hfTokenizer.encode(s.text).ids;
      // The model adds [CLS] and [SEP] itself; clients send the ids between them.
      const inner = ids.slice(1, -1);
      // Whitespace-only sentences have no ids between them, which no client can send.
      if (inner.length === 0) continue;
      const text = tokenizer.decode(inner);
      expect(hfTokenizer.encode(text).ids, s.text.slice(0, 40)).toEqual(ids);
    }
  });
});

async function referenceTokenizer(): Promise<{ encode(text: string): { ids: number[] } }> {
  const hf = (await import("@huggingface/tokenizers")) as unknown as {
    Tokenizer: new (json: object, config: object) => { encode(text: string): { ids: number[] } };
  };
  const dir = minilmDir();
  return new hf.Tokenizer(
    JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")) as object,
    JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")) as object,
  );
}
