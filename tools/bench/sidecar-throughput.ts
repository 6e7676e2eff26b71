/**
 * Raw throughput of the sidecar alone (no queue, no worker): the denominator for the cluster's
 * overhead. One real Candle sidecar with MiniLM-L6-v2 and SmolLM2-135M-Instruct resident:
 *
 * - MiniLM: batches that fill a padded-token budget of 1k, 4k and 16k tokens (inputs of
 *   `--seq` tokens each), sent back to back; tokens/s over the wall time.
 * - SmolLM2: 1, 4 and 16 sequences generating `--gen-tokens` tokens at once; generated
 *   tokens/s over the wall time (the sidecar decodes concurrent sequences in one batch). Three
 *   times: with the sidecar's default `gguf_weights` (`kernels`: Q4_1 re-quantized to Q8_0 on
 *   CPU), with the GGUF's Q4_1 weights as stored, and expanded to f32.
 *
 * Each figure is set beside the CPU's theoretical FP32 limit for the same model: FLOPs per
 * token (2 per weight of every matmul, plus attention at the context length) times peak
 * FLOP/s (cores × clock × `--flops-per-cycle`). Writes JSON to `--out`.
 *
 * `--device cuda:0` runs the sidecar on a GPU and `--dtypes f32,f16` measures MiniLM in each
 * precision; `--no-generators` leaves SmolLM2 out. `--adapters` also decodes the largest
 * concurrency with LoRA adapters (rank 8 on the attention projections, seeded, PEFT's layout):
 * every sequence with one adapter, and every sequence with its own, beside the base model. Off the CPU the FP32 limit is not computed
 * (the CPU's peak says nothing about a GPU); the achieved GFLOP/s are reported instead.
 * `--model-threads N` loads MiniLM with N model threads and keeps N batches in flight
 * (`compute_share` then sums the threads' busy time); `--compute-threads` is the sidecar's flag.
 *
 *   node --import tsx tools/bench/sidecar-throughput.ts --out sidecar-throughput.json
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SidecarClient } from "@shoal/sidecar-client";
import { makeLoraAdapter, readBaseShape } from "@shoal/adapters";
import { minilmDir, smollm2Dir, smollm2Gguf, startSidecar, tempDir } from "@shoal/testing";

const { values } = parseArgs({
  options: {
    budgets: { type: "string", default: "1024,4096,16384" },
    seq: { type: "string", default: "128" },
    seconds: { type: "string", default: "10" },
    concurrency: { type: "string", default: "1,4,16" },
    "gen-tokens": { type: "string", default: "64" },
    device: { type: "string", default: "cpu" },
    // MiniLM's model threads (`load`'s `threads`), each kept busy by a sender of its own.
    "model-threads": { type: "string", default: "1" },
    // The sidecar's `--compute-threads`; unset, every core.
    "compute-threads": { type: "string" },
    dtypes: { type: "string", default: "f32" },
    "no-generators": { type: "boolean", default: false },
    adapters: { type: "boolean", default: false },
    // Default: from /proc/cpuinfo (see flopsPerCycle).
    "flops-per-cycle": { type: "string" },
    out: { type: "string" },
  },
});
const list = (s: string): number[] => s.split(",").map(Number);
const seconds = Number(values.seconds);
const seq = Number(values.seq);
const genTokens = Number(values["gen-tokens"]);

/**
 * FP32 FLOPs one core can retire per cycle: Intel cores with AVX-512 (Xeon Scalable) have two
 * 512-bit FMA pipes, 32 FMAs; Zen 4 runs AVX-512 on two 256-bit pipes, and AVX2 cores have two
 * 256-bit pipes: 16 FMAs. One FMA is two FLOPs.
 */
function flopsPerCycle(cpuinfo: string): number {
  const flags = new Set(/^flags\s*:\s*(.*)$/m.exec(cpuinfo)?.[1]?.split(" ") ?? []);
  return cpuinfo.includes("GenuineIntel") && flags.has("avx512f") ? 64 : 32;
}

/** Peak FP32 FLOP/s of the cores this process may use, from the clock /proc/cpuinfo reports. */
async function peakFlops(): Promise<{
  cores: number;
  ghz: number;
  flops_per_cycle: number;
  peak_gflops: number;
}> {
  const cpuinfo = await readFile("/proc/cpuinfo", "utf8");
  const mhz = Number(/cpu MHz\s*:\s*([\d.]+)/.exec(cpuinfo)?.[1] ?? NaN);
  const cores = availableParallelism();
  const perCycle = Number(values["flops-per-cycle"] ?? flopsPerCycle(cpuinfo));
  const ghz = mhz / 1000;
  return { cores, ghz, flops_per_cycle: perCycle, peak_gflops: cores * ghz * perCycle };
}

/** FLOPs of one token through a BERT encoder at context `ctx`, from its `config.json`. */
async function bertFlopsPerToken(dir: string, ctx: number): Promise<number> {
  const c = JSON.parse(await readFile(join(dir, "config.json"), "utf8")) as {
    hidden_size: number;
    num_hidden_layers: number;
    intermediate_size: number;
  };
  const h = c.hidden_size;
  const perLayer = 4 * h * h + 2 * h * c.intermediate_size;
  // QKᵀ and attention × V: 2·ctx·h multiply-adds per token per layer.
  return c.num_hidden_layers * (2 * perLayer + 4 * ctx * h);
}

/**
 * FLOPs of one generated token of SmolLM2-135M at context `ctx`. Dimensions from the GGUF's
 * `llama.*` metadata (hidden 576, 30 layers, 9 query and 3 key/value heads of 64, MLP 1536,
 * vocabulary 49152, output head tied to the embedding).
 */
function smollm2FlopsPerToken(ctx: number): number {
  const [h, layers, kv, mlp, vocab] = [576, 30, 3 * 64, 1536, 49152];
  const perLayer = 2 * h * h + 2 * h * kv + 3 * h * mlp;
  return layers * (2 * perLayer + 4 * ctx * h) + 2 * h * vocab;
}

const cpu = values.device === "cpu";
const dtypes = values.dtypes.split(",") as ("f32" | "f16" | "bf16")[];
const modelThreads = Number(values["model-threads"]);
const computeThreads = values["compute-threads"];
const sidecar = await startSidecar({
  models: {},
  args: [
    "--device",
    values.device,
    ...(computeThreads === undefined ? [] : ["--compute-threads", computeThreads]),
  ],
});
const client = await SidecarClient.connect({
  socketPath: sidecar.socketPath,
  requestTimeoutMs: 600_000,
});
try {
  const peak = await peakFlops();
  // "a" is one WordPiece token; with [CLS] and [SEP] an input is exactly `seq` tokens.
  const text = Array.from({ length: seq - 2 }, () => "a").join(" ");
  const minilmFlops = await bertFlopsPerToken(minilmDir(), seq);
  const embed = [];
  for (const dtype of dtypes) {
    const model = `minilm-${dtype}`;
    await client.load(model, minilmDir(), { dtype, threads: modelThreads });
    for (const budget of list(values.budgets)) {
      const inputs = Array.from({ length: Math.max(1, Math.floor(budget / seq)) }, () => text);
      await Promise.all(
        Array.from({ length: modelThreads }, () => client.embed({ model, inputs })),
      );
      let tokens = 0;
      let batches = 0;
      let computeUs = 0;
      const started = performance.now();
      const sender = async (): Promise<void> => {
        while (performance.now() - started < seconds * 1000) {
          const r = await client.embed({ model, inputs });
          tokens += r.tokens.reduce((a, b) => a + b, 0);
          computeUs += r.computeUs;
          batches++;
        }
      };
      await Promise.all(Array.from({ length: modelThreads }, sender));
      const wallS = (performance.now() - started) / 1000;
      const tokensPerS = tokens / wallS;
      const limit = (peak.peak_gflops * 1e9) / minilmFlops;
      embed.push({
        dtype,
        model_threads: modelThreads,
        budget_tokens: budget,
        inputs_per_batch: inputs.length,
        batches,
        tokens_per_s: tokensPerS,
        achieved_gflops: (tokensPerS * minilmFlops) / 1e9,
        compute_share: computeUs / 1e6 / wallS,
        ...(cpu ? { fp32_limit_tokens_per_s: limit, ratio_to_limit: tokensPerS / limit } : {}),
      });
    }
    await client.unload(model);
  }

  /**
   * Generated tokens/s of `model` at each of `concurrencies`, sequence `i` running with adapter
   * `adapterOf(i)`.
   */
  const generateRuns = async (
    model: string,
    concurrencies = list(values.concurrency),
    adapterOf: (i: number) => string | undefined = () => undefined,
  ): Promise<Record<string, number>[]> => {
    const runs = [];
    const prompt = "Write a short story about a lighthouse keeper.";
    for (const n of concurrencies) {
      const run = async (): Promise<{ completion: number; prompt: number }> => {
        const gens = Array.from({ length: n }, (_, i) =>
          client.generate({
            model,
            messages: [{ role: "user", content: prompt }],
            maxTokens: genTokens,
            temperature: 0.8,
            seed: i,
            adapter: adapterOf(i),
          }),
        );
        const done = await Promise.all(gens.map((g) => g.done));
        return {
          completion: done.reduce((a, d) => a + d.completionTokens, 0),
          prompt: Math.max(...done.map((d) => d.promptTokens)),
        };
      };
      await run();
      const started = performance.now();
      const { completion, prompt: promptTokens } = await run();
      const wallS = (performance.now() - started) / 1000;
      const tokensPerS = completion / wallS;
      // The mean context over the generation: the prompt plus half the generated tokens.
      const limit = (peak.peak_gflops * 1e9) / smollm2FlopsPerToken(promptTokens + genTokens / 2);
      runs.push({
        sequences: n,
        generated_tokens: completion,
        prompt_tokens: promptTokens,
        wall_s: wallS,
        tokens_per_s: tokensPerS,
        fp32_limit_tokens_per_s: limit,
        ratio_to_limit: tokensPerS / limit,
      });
    }
    return runs;
  };
  let generators = {};
  if (!values["no-generators"]) {
    const kernels = await client.load("smollm2", smollm2Gguf());
    const quantized = await generateRuns("smollm2");
    if (values.adapters) {
      const n = Math.max(...list(values.concurrency));
      const shape = await readBaseShape(smollm2Dir(), "gguf");
      const dir = await tempDir("bench-adapters");
      for (let i = 0; i < n; i++) {
        const files = makeLoraAdapter(shape, {
          targetModules: ["q_proj", "k_proj", "v_proj", "o_proj"],
          seed: i + 1,
        });
        await mkdir(join(dir, `a${i}`));
        await writeFile(join(dir, `a${i}`, "adapter_config.json"), files.config);
        await writeFile(join(dir, `a${i}`, "adapter_model.safetensors"), files.weights);
        await client.loadAdapter("smollm2", `a${i}`, join(dir, `a${i}`));
      }
      generators = {
        smollm2_adapters: {
          adapters: { rank: 8, target_modules: ["q_proj", "k_proj", "v_proj", "o_proj"] },
          base: await generateRuns("smollm2", [n]),
          one_adapter: await generateRuns("smollm2", [n], () => "a0"),
          own_adapter_each: await generateRuns("smollm2", [n], (i) => `a${i}`),
        },
      };
    }
    await client.unload("smollm2");
    const asStored = await client.load("smollm2-stored", smollm2Gguf(), { ggufWeights: "stored" });
    const stored = await generateRuns("smollm2-stored");
    await client.unload("smollm2-stored");
    const f32 = await client.load("smollm2-f32", smollm2Gguf(), { ggufWeights: "f32" });
    const dequantized = await generateRuns("smollm2-f32");
    generators = {
      ...generators,
      smollm2: {
        weights: "Q4_1 GGUF, held for kernels (re-quantized to Q8_0 on CPU)",
        memory_bytes: kernels.memoryBytes,
        max_tokens: genTokens,
        runs: quantized,
      },
      smollm2_stored: {
        weights: "Q4_1 GGUF as stored",
        memory_bytes: asStored.memoryBytes,
        max_tokens: genTokens,
        runs: stored,
      },
      smollm2_dequantized: {
        weights: "Q4_1 GGUF as f32",
        memory_bytes: f32.memoryBytes,
        max_tokens: genTokens,
        runs: dequantized,
      },
    };
  }

  const result = {
    scenario: "sidecar-throughput",
    device: values.device,
    cpu: peak,
    minilm: { seq_tokens: seq, flops_per_token: minilmFlops, seconds, batches: embed },
    ...generators,
  };
  const json = JSON.stringify(result, null, 2);
  if (values.out === undefined) console.log(json);
  else await writeFile(values.out, json + "\n");
} finally {
  await client.close();
  await sidecar.stop();
}
