import { readFileSync } from "node:fs";
import { join } from "node:path";
import { minilmDir, repoRoot } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { estimatingTokenCounter, loadTokenCounter } from "../src/index.js";

interface FixtureSentence {
  readonly text: string;
  readonly tokens: number;
  readonly truncated: boolean;
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json"), "utf8"),
) as { sentences: FixtureSentence[]; max_seq_length: number };

describe("token counting against the reference tokenizer", () => {
  it("counts exactly what sentence-transformers counted, for every fixture sentence", async () => {
    const counter = await loadTokenCounter(minilmDir());
    expect(counter.kind).toBe("exact");
    for (const s of fixture.sentences) {
      const counted = counter.count(s.text);
      expect(Math.min(counted, fixture.max_seq_length), s.text.slice(0, 40)).toBe(s.tokens);
      expect(counted > fixture.max_seq_length, s.text.slice(0, 40)).toBe(s.truncated);
    }
  });

  it("falls back to an estimate that is at least the right order of magnitude", async () => {
    const exact = await loadTokenCounter(minilmDir());
    const estimate = estimatingTokenCounter();
    for (const s of fixture.sentences.filter((x) => x.text.trim().length > 20)) {
      const ratio = estimate.count(s.text) / exact.count(s.text);
      expect(ratio, s.text.slice(0, 40)).toBeGreaterThan(0.25);
      expect(ratio, s.text.slice(0, 40)).toBeLessThan(4);
    }
  });
});

describe("decoding token ids", () => {
  it("gives back text that encodes to the same ids, for every fixture sentence", async () => {
    const counter = await loadTokenCounter(minilmDir());
    const hfTokenizer = await referenceTokenizer();
    expect(counter.vocabSize).toBe(30522);
    for (const s of fixture.sentences) {
      const ids = hfTokenizer.encode(s.text).ids;
      // The model adds [CLS] and [SEP] itself; clients send the ids between them.
      const inner = ids.slice(1, -1);
      // Whitespace-only sentences have no ids between them, which no client can send.
      if (inner.length === 0) continue;
      const text = counter.decode?.(inner) ?? "";
      expect(hfTokenizer.encode(text).ids, s.text.slice(0, 40)).toEqual(ids);
    }
  });

  it("has no decoder when only estimating", () => {
    expect(estimatingTokenCounter().decode).toBeUndefined();
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
