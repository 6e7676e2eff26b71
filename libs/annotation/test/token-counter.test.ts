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
