import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tempDir } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasGgufMagic } from "./gguf.js";

let dir: string;
beforeAll(async () => {
  dir = await tempDir("gguf-magic");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("hasGgufMagic", () => {
  it.each([
    ["a GGUF v3 header", "GGUF\x03\x00\x00\x00", true],
    ["the magic alone", "GGUF", true],
    ["lower-case magic", "gguf\x03\x00\x00\x00", false],
    ["a safetensors header", "\x08\x00\x00\x00\x00\x00\x00\x00{}", false],
    ["three bytes", "GGU", false],
    ["nothing", "", false],
  ])("%s → %s", async (name, content, expected) => {
    const path = join(dir, `${name}.gguf`);
    await writeFile(path, content, "latin1");
    expect(await hasGgufMagic(path)).toBe(expected);
  });
});
