/**
 * MiniLM's embeddings on a device, in each precision, against the sentence-transformers
 * reference (tools/reference/fixtures/all-minilm-l6-v2.json): the Rust golden tests, for a
 * machine that has only the built sidecar, such as a GPU host with no toolchain.
 *
 *   node --import tsx tools/bench/golden-check.ts --device cuda:0 --dtypes f32,f16,bf16 \
 *     --out golden.json
 *
 * Every fixture sentence goes through in one batch. Reports each precision's lowest cosine,
 * its loaded memory and whether the token counts match, and exits 1 when a cosine is below the
 * Rust tests' bound for that precision (f32 0.9999, f16 0.999, bf16 0.99). The weights' own
 * dtype is recorded too: an f16 file computed in f32 is held to f32's bound all the same.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readSafetensorsHeader } from "@shoal/model-sources";
import { SidecarClient, toFloat32Array } from "@shoal/sidecar-client";
import { minilmDir, repoRoot, startSidecar } from "@shoal/testing";

const BOUNDS = { f32: 0.9999, f16: 0.999, bf16: 0.99 } as const;
type Precision = keyof typeof BOUNDS;

const { values } = parseArgs({
  options: {
    device: { type: "string", default: "cpu" },
    dtypes: { type: "string", default: "f32,f16,bf16" },
    out: { type: "string" },
  },
});
const dtypes = values.dtypes.split(",").map((d) => {
  if (!(d in BOUNDS)) {
    console.error(`unknown dtype ${d}; dtypes: ${Object.keys(BOUNDS).join(", ")}`);
    process.exit(2);
  }
  return d as Precision;
});

interface Sentence {
  readonly text: string;
  readonly embedding: readonly number[];
  readonly tokens: number;
}
const fixture = join(repoRoot(), "tools", "reference", "fixtures", "all-minilm-l6-v2.json");
const sentences = (JSON.parse(await readFile(fixture, "utf8")) as { sentences: Sentence[] })
  .sentences;
const dir = minilmDir();
const stored = [
  ...new Set(
    (await readSafetensorsHeader(join(dir, "model.safetensors"))).tensors.map((t) => t.dtype),
  ),
];

const sidecar = await startSidecar({ models: {}, args: ["--device", values.device] });
const client = await SidecarClient.connect({
  socketPath: sidecar.socketPath,
  requestTimeoutMs: 300_000,
});
const results = [];
try {
  for (const dtype of dtypes) {
    const name = `minilm-${dtype}`;
    const loaded = await client.load(name, dir, { dtype, timeoutMs: 300_000 });
    const out = await client.embed({ model: name, inputs: sentences.map((s) => s.text) });
    const values = toFloat32Array(out.embeddings);
    let lowest = Infinity;
    sentences.forEach((sentence, i) => {
      const row = values.subarray(i * out.dim, (i + 1) * out.dim);
      let dot = 0;
      let norm = 0;
      sentence.embedding.forEach((x, k) => {
        const y = row[k] ?? 0;
        dot += x * y;
        norm += y * y;
      });
      lowest = Math.min(lowest, dot / Math.sqrt(norm));
    });
    const tokensMatch = sentences.every((s, i) => out.tokens[i] === s.tokens);
    results.push({
      dtype,
      memory_bytes: loaded.memoryBytes,
      lowest_cosine: lowest,
      bound: BOUNDS[dtype],
      tokens_match: tokensMatch,
      pass: lowest >= BOUNDS[dtype] && tokensMatch,
    });
    await client.unload(name);
  }
} finally {
  await client.close();
  await sidecar.stop();
}

const result = {
  check: "golden",
  device: values.device,
  weights_stored_as: stored,
  sentences: sentences.length,
  results,
};
const json = JSON.stringify(result, null, 2);
if (values.out === undefined) console.log(json);
else await writeFile(values.out, json + "\n");
for (const r of results) {
  console.error(
    `[golden] ${values.device} ${r.dtype}: lowest cosine ${r.lowest_cosine.toFixed(6)} ` +
      `(bound ${r.bound}), tokens ${r.tokens_match ? "match" : "DIFFER"}: ${r.pass ? "pass" : "FAIL"}`,
  );
}
process.exit(results.every((r) => r.pass) ? 0 : 1);
