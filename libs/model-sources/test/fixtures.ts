import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { ModelEntry, ModelSource } from "@shoal/config";
import { expect } from "vitest";
import { ModelSourceError } from "../src/index.js";

/** A catalog entry for the MiniLM model with the given source and cache directory. */
export function minilmEntry(source: ModelSource, dir: string): ModelEntry {
  return {
    id: "sentence-transformers/all-MiniLM-L6-v2",
    key: "all-minilm-l6-v2",
    family: "embedding",
    dimensions: 384,
    maxInputTokens: 256,
    pinned: false,
    source,
    dir,
  };
}

/** Lower-case hex sha256 of a file, streamed. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Every file under `dir`, relative, sorted (directories themselves excluded). */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/**
 * A safetensors file: the 8-byte little-endian header length, the JSON header, then
 * `dataBytes` zero bytes.
 */
export function safetensorsBytes(header: unknown, dataBytes: number): Buffer {
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([prefix, json, Buffer.alloc(dataBytes)]);
}

/** Rejections of `promise` as a value, failing the test when it resolves instead. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value: unknown) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** Awaits a rejection and checks it is a ModelSourceError for `reason`. */
export async function expectFailure(
  call: Promise<unknown>,
  reason: ModelSourceError["reason"],
): Promise<ModelSourceError> {
  const error = await rejectionOf(call);
  expect(error).toBeInstanceOf(ModelSourceError);
  expect((error as ModelSourceError).reason).toBe(reason);
  return error as ModelSourceError;
}
