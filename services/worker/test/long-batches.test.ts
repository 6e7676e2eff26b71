import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { simEmbeddingEntry, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeEach(async () => {
  pipeline = await startPipeline();
});

afterEach(async () => {
  await pipeline.stop();
});

/** 32 inputs of ~256 tokens, one batch. */
const heavy = Array.from(
  { length: 32 },
  (_, i) => `${i} ${"a batch longer than the ack wait ".repeat(60)}`,
);

/** What every batch of the slow worker takes, whatever the machine. */
const SLOW_BATCH_MS = 3_000;

/**
 * A worker whose MiniLM is simulated at a fixed {@link SLOW_BATCH_MS} a batch: long by
 * construction, where the real model finishes this batch in under a second on fast hardware.
 */
async function slowWorkerEnv(): Promise<Record<string, string>> {
  const catalog = join(await tempDir("long-batches"), "catalog.json");
  const entry = simEmbeddingEntry(MINILM, "all-minilm-l6-v2", { fixedUs: SLOW_BATCH_MS * 1000 });
  await writeFile(catalog, JSON.stringify({ models: [entry] }));
  return { SHOAL_CATALOG: catalog, SHOAL_SIDECAR_BACKEND: "sim" };
}

it("keeps a batch longer than the ack wait from being redelivered (in-progress)", async () => {
  // Two workers: were the batch's ack wait to lapse, the idle one would get the item again
  // and answer it a second time.
  const slow = await slowWorkerEnv();
  await pipeline.startWorker("slow-a", { ...slow, SHOAL_ACK_WAIT_MS: "1000" });
  await pipeline.startWorker("slow-b", { ...slow, SHOAL_ACK_WAIT_MS: "1000" });
  const started = performance.now();
  const outcome = await pipeline.gateway.embed({ model: MINILM, inputs: heavy }, ROOT_CONTEXT);
  // The test's premise, which the simulated cost guarantees: the batch outlived the ack wait.
  expect(performance.now() - started).toBeGreaterThanOrEqual(SLOW_BATCH_MS);
  expect(outcome.tokens).toHaveLength(heavy.length);
  // Long enough for a redelivered copy to be computed and answered by the other worker.
  await new Promise((r) => setTimeout(r, 2 * (performance.now() - started)));
  const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
  expect(info.delivered.consumer_seq).toBe(1);
  expect(info.num_ack_pending).toBe(0);
  expect(pipeline.gateway.duplicateAnswers).toBe(0);
}, 120_000);

it("replaces a stalled sidecar and answers its batch from the next one", async () => {
  const worker = await pipeline.startWorker("stalls", { SHOAL_BATCH_TIMEOUT_MS: "2000" });
  const sidecarPid = execFileSync("pgrep", ["-P", String(worker.pid), "shoal-sidecar"], {
    encoding: "utf8",
  }).trim();
  expect(sidecarPid).toMatch(/^\d+$/);
  // A real stall: the process is alive but does nothing.
  process.kill(Number(sidecarPid), "SIGSTOP");
  const outcome = await pipeline.gateway.embed(
    { model: MINILM, inputs: ["stuck, then served"] },
    ROOT_CONTEXT,
  );
  expect(outcome.tokens).toEqual([6]);
  expect(worker.output()).toContain("killing a stalled sidecar");
  const replacement = execFileSync("pgrep", ["-P", String(worker.pid), "shoal-sidecar"], {
    encoding: "utf8",
  }).trim();
  expect(replacement).not.toBe(sidecarPid);
}, 120_000);

it("finishes the batch in hand on SIGTERM, then exits cleanly", async () => {
  // Slow, so that the signal lands while the batch runs.
  const worker = await pipeline.startWorker("draining", await slowWorkerEnv());
  const answer = pipeline.gateway.embed({ model: MINILM, inputs: heavy }, ROOT_CONTEXT);
  const held = async () =>
    (await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER)).num_ack_pending;
  while ((await held()) === 0) await new Promise((r) => setTimeout(r, 10));
  worker.kill("SIGTERM");
  const outcome = await answer;
  expect(outcome.tokens).toHaveLength(heavy.length);
  expect((await worker.exited).code).toBe(0);
  expect(await held()).toBe(0);
}, 120_000);
