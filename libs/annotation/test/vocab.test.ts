import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { minilmDir } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readVocabSize } from "../src/index.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "shoal-vocab-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function sizeOf(tokenizer: object): Promise<number> {
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizer));
  return readVocabSize(dir);
}

describe("readVocabSize", () => {
  it("reads MiniLM's 30,522 WordPiece ids, as the sidecar counts them", async () => {
    expect(await readVocabSize(minilmDir())).toBe(30522);
  });

  it("counts added tokens past the model's vocabulary and Unigram's list of pieces", async () => {
    expect(await sizeOf({ model: { vocab: { a: 0, b: 1 } }, added_tokens: [{ id: 5 }] })).toBe(6);
    expect(
      await sizeOf({
        model: {
          vocab: [
            ["a", -1],
            ["b", -2],
            ["c", -3],
          ],
        },
      }),
    ).toBe(3);
  });

  it("refuses a tokenizer.json without a vocabulary", async () => {
    await expect(sizeOf({ model: {} })).rejects.toThrow(/has no vocabulary/);
  });
});
