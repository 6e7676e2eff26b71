import { ROOT_CONTEXT } from "@opentelemetry/api";
import type { EmbedOutcome } from "@shoal/gateway";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
});

afterAll(async () => {
  await pipeline.stop();
});

const workerEnv = {
  SHOAL_ACK_WAIT_MS: "3000",
  // Small batches keep several in flight, so the kill lands mid-stream.
  SHOAL_BATCH_MAX_INPUTS: "4",
};

it("loses no request when the worker is SIGKILLed with 50 in flight", async () => {
  const { gateway, jsm } = pipeline;
  const first = await pipeline.startWorker("doomed", workerEnv);
  const texts = Array.from(
    { length: 50 },
    (_, i) =>
      `Request ${i}: ${"the queue keeps what the worker had not acknowledged ".repeat(4 + (i % 8))}`,
  );
  let answered = 0;
  const calls = texts.map((text) =>
    gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT).then((outcome) => {
      answered++;
      return outcome;
    }),
  );
  // A failed assertion below must not leave 50 rejections unhandled.
  for (const call of calls) call.catch(() => undefined);
  // Kill once work is flowing and the worker holds pulled, unacked items (mid-batch).
  const held = async () =>
    (await jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER)).num_ack_pending;
  while (answered === 0 || (await held()) === 0) await new Promise((r) => setTimeout(r, 5));
  first.kill("SIGKILL");
  const inFlightAtKill = texts.length - answered;
  await first.exited;
  expect(inFlightAtKill).toBeGreaterThan(0);
  // Work the dead worker had pulled but not acked: only redelivery can answer it.
  expect(await held()).toBeGreaterThan(0);

  await pipeline.startWorker("replacement", workerEnv);
  const outcomes: EmbedOutcome[] = await Promise.all(calls);
  expect(outcomes).toHaveLength(50);

  // Each answer belongs to its own request: the same texts embedded again, in one request,
  // give the same vectors index by index.
  const again = await gateway.embed({ model: MINILM, inputs: texts }, ROOT_CONTEXT);
  const row = (o: EmbedOutcome, i: number): Float32Array =>
    new Float32Array(
      o.embeddings.buffer.slice(
        o.embeddings.byteOffset + i * 384 * 4,
        o.embeddings.byteOffset + (i + 1) * 384 * 4,
      ),
    );
  outcomes.forEach((outcome, i) => {
    const a = row(outcome, 0);
    const b = row(again, i);
    let dot = 0;
    for (let k = 0; k < 384; k++) dot += (a[k] ?? 0) * (b[k] ?? 0);
    expect(dot, `request ${i}`).toBeGreaterThanOrEqual(0.9999);
  });
  expect(gateway.pending).toBe(0);
}, 180_000);
