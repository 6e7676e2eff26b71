import { fromBinary } from "@bufbuild/protobuf";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import { WorkBundleSchema } from "@shoal/proto";
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
  // Every request that reached the queue, by id, as the server delivered its work messages.
  const queued = new Set<string>();
  const ledger = pipeline.nc.subscribe("shoal.work.>", {
    callback: (_err, msg) => {
      for (const item of fromBinary(WorkBundleSchema, msg.data).items) queued.add(item.requestId);
    },
  });
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
  ledger.unsubscribe();
  const rejected = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as Error] : []));
  const fulfilled = new Set(
    settled.flatMap((s) => (s.status === "fulfilled" ? [s.value.requestId] : [])),
  );
  // A request may be refused while the server is down (it was never queued), but every one
  // that reached the queue must be answered: none of them may be among the refused.
  expect(queued.size).toBeGreaterThan(answeredBeforeRestart);
  expect([...queued].filter((id) => !fulfilled.has(id))).toEqual([]);
  for (const err of rejected) {
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).not.toBeInstanceOf(DeadlineExceededError);
  }
  // The pipeline recovered: work was answered after the restart, not only before it.
  expect(fulfilled.size).toBeGreaterThan(answeredBeforeRestart);
  expect(fulfilled.size + rejected.length).toBe(texts.length);
  expect(pipeline.gateway.pending).toBe(0);
}, 180_000);
