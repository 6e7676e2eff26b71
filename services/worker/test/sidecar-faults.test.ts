import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { ErrorCode, WorkBundleSchema, WorkResultsSchema, type WorkResult } from "@shoal/proto";
import { SidecarClient } from "@shoal/sidecar-client";
import { sidecarPidOf, tempDir } from "@shoal/testing";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeEach(async () => {
  pipeline = await startPipeline();
});

afterEach(async () => {
  await pipeline.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function held(): Promise<number> {
  return (await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER)).num_ack_pending;
}

it("answers a batch whose sidecar is SIGKILLed mid-batch, from the sidecar that replaces it", async () => {
  const worker = await pipeline.startWorker("loses-its-sidecar");
  const first = sidecarPidOf(worker.pid);
  // 32 inputs of ~256 tokens: a batch that takes seconds on a CPU sidecar.
  const inputs = Array.from({ length: 32 }, (_, i) => `${i} ${"killed in the middle ".repeat(60)}`);
  const answer = pipeline.gateway.embed({ model: MINILM, inputs }, ROOT_CONTEXT);
  while ((await held()) === 0) await sleep(10);
  // Inside the forward pass, not before it.
  await sleep(300);
  process.kill(first, "SIGKILL");
  const outcome = await answer;
  expect(outcome.tokens).toHaveLength(inputs.length);
  expect(sidecarPidOf(worker.pid)).not.toBe(first);
  expect(pipeline.gateway.duplicateAnswers).toBe(0);
  expect(await held()).toBe(0);
}, 120_000);

it("answers an item that expired in the queue with DEADLINE_EXCEEDED and never computes it", async () => {
  // Everything answered to any ingress, as the worker publishes it.
  const results: WorkResult[] = [];
  const sub = pipeline.nc.subscribe("shoal.reply.v1.>", {
    callback: (_, msg) => {
      results.push(...fromBinary(WorkResultsSchema, msg.data).results);
    },
  });
  // No worker yet: the item outlives its deadline in the queue.
  const answer = pipeline.gateway
    .embed({ model: MINILM, inputs: ["too late"], timeoutMs: 300 }, ROOT_CONTEXT)
    .then(
      () => "answered",
      (e: unknown) => (e as { kind?: string }).kind,
    );
  expect(await answer).toBe("deadline_exceeded");
  const socketPath = join(await tempDir("late-worker"), "sidecar.sock");
  await pipeline.startWorker("late", { SHOAL_SIDECAR_SOCKET: socketPath });
  await expect
    .poll(
      async () => {
        const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
        return info.num_pending + info.num_ack_pending;
      },
      { timeout: 10_000 },
    )
    .toBe(0);
  await pipeline.nc.flush();
  sub.unsubscribe();
  expect(results).toHaveLength(1);
  expect(results[0]?.outcome.case).toBe("error");
  expect(results[0]?.outcome.value).toMatchObject({ code: ErrorCode.DEADLINE_EXCEEDED });
  // Never computed, by the sidecar's own count: the worker ran nothing else.
  const sidecar = await SidecarClient.connect({ socketPath });
  try {
    const minilm = (await sidecar.stats()).models.find((m) => m.model === "all-minilm-l6-v2");
    expect(minilm).toMatchObject({ batches: 0, items: 0 });
  } finally {
    await sidecar.close();
  }
}, 120_000);

it("refuses an overload burst past its bound at once, and answers every request it accepted", async () => {
  await pipeline.stop();
  pipeline = await startPipeline({ maxPending: 8 });
  await pipeline.startWorker("burst");
  let queuedItems = 0;
  const queued = pipeline.nc.subscribe("shoal.work.v1.>", {
    callback: (_err, msg) => {
      queuedItems += fromBinary(WorkBundleSchema, msg.data).items.length;
    },
  });
  const texts = Array.from({ length: 40 }, (_, i) => `burst request number ${i}`);
  const outcomes = await Promise.all(
    texts.map((text) =>
      pipeline.gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT).then(
        (o) => ({ answered: o.tokens.length }),
        (e: unknown) => ({ refused: (e as { kind?: string }).kind }),
      ),
    ),
  );
  const refused = outcomes.filter((o) => "refused" in o);
  const answered = outcomes.filter((o) => "answered" in o);
  // The first 8 are held; the other 32 arrive while they are, and are refused, not queued.
  expect(answered).toHaveLength(8);
  expect(answered.every((o) => o.answered === 1)).toBe(true);
  expect(refused).toHaveLength(32);
  expect(new Set(refused.map((o) => o.refused))).toEqual(new Set(["resource_exhausted"]));
  // Nothing refused reached the queue: it saw only the accepted requests.
  await pipeline.nc.flush();
  queued.unsubscribe();
  expect(queuedItems).toBe(8);
}, 120_000);
