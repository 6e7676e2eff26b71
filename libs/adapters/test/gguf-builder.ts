/**
 * Builds GGUF headers byte by byte, the way llama.cpp's writer lays them out, so the metadata
 * reader can be tested against well-formed files other than SmolLM2 and against broken ones.
 */

export type GgufEntry =
  | { readonly key: string; readonly u32: number }
  | { readonly key: string; readonly u64: bigint }
  | { readonly key: string; readonly i8: number }
  | { readonly key: string; readonly f32: number }
  | { readonly key: string; readonly string: string }
  | { readonly key: string; readonly strings: readonly string[] }
  | { readonly key: string; readonly u32s: readonly number[] }
  /** A raw value: a type tag and the bytes after it, for types the reader must refuse. */
  | { readonly key: string; readonly type: number; readonly raw: Buffer };

export interface GgufHeaderOptions {
  readonly magic?: string;
  readonly version?: number;
  readonly tensors?: bigint;
  /** Overrides the metadata count written, to claim more entries than follow. */
  readonly count?: bigint;
}

export function ggufString(value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  return Buffer.concat([u64(BigInt(bytes.length)), bytes]);
}

export function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value);
  return b;
}

export function u64(value: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(value);
  return b;
}

function value(entry: GgufEntry): Buffer {
  if ("u32" in entry) return Buffer.concat([u32(4), u32(entry.u32)]);
  if ("u64" in entry) return Buffer.concat([u32(10), u64(entry.u64)]);
  if ("i8" in entry) return Buffer.concat([u32(1), Buffer.from([entry.i8 & 0xff])]);
  if ("f32" in entry) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(entry.f32);
    return Buffer.concat([u32(6), b]);
  }
  if ("string" in entry) return Buffer.concat([u32(8), ggufString(entry.string)]);
  if ("strings" in entry) {
    return Buffer.concat([
      u32(9),
      u32(8),
      u64(BigInt(entry.strings.length)),
      ...entry.strings.map(ggufString),
    ]);
  }
  if ("u32s" in entry) {
    return Buffer.concat([u32(9), u32(4), u64(BigInt(entry.u32s.length)), ...entry.u32s.map(u32)]);
  }
  return Buffer.concat([u32(entry.type), entry.raw]);
}

/** A GGUF file's header and metadata (no tensor infos or data follow). */
export function ggufHeader(entries: readonly GgufEntry[], options: GgufHeaderOptions = {}): Buffer {
  return Buffer.concat([
    Buffer.from(options.magic ?? "GGUF", "latin1"),
    u32(options.version ?? 3),
    u64(options.tensors ?? 0n),
    u64(options.count ?? BigInt(entries.length)),
    ...entries.flatMap((e) => [ggufString(e.key), value(e)]),
  ]);
}

/** The metadata of a small Llama with grouped-query attention, as llama.cpp writes it. */
export function llamaEntries(
  overrides: Readonly<Record<string, GgufEntry | null>> = {},
): GgufEntry[] {
  const base: GgufEntry[] = [
    { key: "general.architecture", string: "llama" },
    { key: "general.name", string: "tiny" },
    { key: "llama.block_count", u32: 4 },
    { key: "llama.embedding_length", u32: 64 },
    { key: "llama.feed_forward_length", u32: 128 },
    { key: "llama.attention.head_count", u32: 8 },
    { key: "llama.attention.head_count_kv", u32: 2 },
    { key: "tokenizer.ggml.tokens", strings: ["<s>", "</s>", "a", "b"] },
    { key: "tokenizer.ggml.token_type", u32s: [3, 3, 1, 1] },
    { key: "tokenizer.chat_template", string: "{{ messages }}" },
  ];
  const entries = base.flatMap((e) => {
    const override = overrides[e.key];
    if (override === undefined) return [e];
    return override === null ? [] : [override];
  });
  for (const [key, entry] of Object.entries(overrides)) {
    if (entry !== null && !base.some((e) => e.key === key)) entries.push(entry);
  }
  return entries;
}
