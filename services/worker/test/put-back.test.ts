import { ROOT_CONTEXT } from "@opentelemetry/api";
import { parseAckSubject } from "@shoal/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;
let acks: Subscription;
/** Highest delivery count among the put-backs (NAKs) the worker sent. */
let mostDeliveriesPutBack = 0;

beforeAll(async () => {
  // The gateway cuts work messages to the worker's batch ceiling, as a deployment would.
  pipeline = await startPipeline({ partMaxPaddedTokens: 128 });
  // The worker acks by publishing to each delivery's `$JS.ACK…` subject, which carries the
  // delivery count; listening there shows how often an item was put back.
  acks = pipeline.nc.subscribe("$JS.ACK.>", {
    callback: (_err, msg) => {
      if (!msg.string().startsWith("-NAK")) return;
      const { deliveryCount } = parseAckSubject(msg.subject);
      mostDeliveriesPutBack = Math.max(mostDeliveriesPutBack, deliveryCount);
    },
  });
  // One worker, no local queue and batches of at most 128 padded tokens: most of each pull
  // goes back to JetStream, many times over for the items formed last.
  await pipeline.startWorker("over-puller", {
    SHOAL_SIDECAR_BACKEND: "sim",
    SHOAL_BATCH_MAX_PADDED_TOKENS: "128",
    SHOAL_MAX_DELIVER: "2",
  });
});

afterAll(async () => {
  acks.unsubscribe();
  await pipeline.stop();
});

it("answers items put back more often than SHOAL_MAX_DELIVER: put-backs use no attempts", async () => {
  const texts = Array.from(
    { length: 60 },
    (_, i) => `put back ${i}: ${"an over-pulled item is not a failed one ".repeat(1 + (i % 5))}`,
  );
  const outcomes = await Promise.all(
    texts.map((text) => pipeline.gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT)),
  );
  expect(outcomes.every((o) => o.dim > 0 && o.embeddings.byteLength === o.dim * 4)).toBe(true);
  expect(mostDeliveriesPutBack).toBeGreaterThan(2);
  expect(pipeline.gateway.duplicateAnswers).toBe(0);
}, 180_000);
