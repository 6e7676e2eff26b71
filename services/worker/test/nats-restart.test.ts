import { ROOT_CONTEXT } from "@opentelemetry/api";
import { DeadlineExceededError, UnavailableError } from "@shoal/gateway";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;

beforeAll(async () => {
  pipeline = await startPipeline();
  await pipeline.startWorker("survivor", {
    SHOAL_ACK_WAIT_MS: "3000",
    SHOAL_BATCH_MAX_INPUTS: "4",
  });
});

afterAll(async () => {
  await pipeline.stop();
});

it("answers every request JetStream accepted when nats-server restarts mid-load", async () => {
  const texts = Array.from(
    { length: 40 },
    (_, i) => `restart ${i}: ${"the store outlives the server ".repeat(3 + (i % 6))}`,
  );
  let answered = 0;
  const calls = texts.map((text) =>
    pipeline.gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT).then((o) => {
      answered++;
      return o;
    }),
  );
  while (answered === 0) await new Promise((r) => setTimeout(r, 5));
  const answeredBeforeRestart = answered;
  await pipeline.nats.restart();
  const settled = await Promise.allSettled(calls);
  const rejected = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as Error] : []));
  // A request may be refused while the server is down (it was never queued), but one that was
  // queued must be answered: a deadline error here would be a lost request.
  for (const err of rejected) {
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).not.toBeInstanceOf(DeadlineExceededError);
  }
  const fulfilled = settled.filter((s) => s.status === "fulfilled");
  // The pipeline recovered: work was answered after the restart, not only before it.
  expect(fulfilled.length).toBeGreaterThan(answeredBeforeRestart);
  expect(fulfilled.length + rejected.length).toBe(texts.length);
  expect(pipeline.gateway.pending).toBe(0);
}, 180_000);
