import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "@shoal/testing";

export interface FixtureSentence {
  readonly text: string;
  readonly embedding: readonly number[];
  readonly tokens: number;
  readonly truncated: boolean;
}

/** Reference embeddings computed by sentence-transformers (tools/reference). */
export function minilmFixture(): readonly FixtureSentence[] {
  const path = join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json");
  return (JSON.parse(readFileSync(path, "utf8")) as { sentences: FixtureSentence[] }).sentences;
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

export function norm(a: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) ** 2;
  return Math.sqrt(sum);
}
