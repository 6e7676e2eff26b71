import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { BlobUploader, ensureBlobBucket, serveBlobs, type BlobServer } from "@shoal/blobs";
import { workSubject } from "@shoal/jetstream";
import {
  ErrorCode,
  WorkBundleSchema,
  WorkItemSchema,
  WorkResultsSchema,
  type WorkResult,
} from "@shoal/proto";
import { createLogger } from "@shoal/telemetry";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

// Work items that reference offloaded inputs, published straight to the stream: the worker
// fetches what is there, and answers (and acks) an item whose blob is gone or not the one
// referenced, since no retry could bring it back.

let pipeline: Pipeline;
let offloader: BlobServer;
let answers: Subscription;
const received: WorkResult[] = [];
const REPLY = "shoal.reply.v1.blobtest";

beforeAll(async () => {
  pipeline = await startPipeline();
  const store = await ensureBlobBucket(pipeline.nc);
  offloader = serveBlobs({
    nc: pipeline.nc,
    store,
    offloaderId: "w",
    logger: createLogger({ service: "test", level: "silent" }),
  });
  answers = pipeline.nc.subscribe(REPLY, {
    callback: (_err, msg) => {
      received.push(...fromBinary(WorkResultsSchema, msg.data).results);
    },
  });
  await pipeline.startWorker("blobs");
});

afterAll(async () => {
  answers.unsubscribe();
  await offloader.stop();
  await pipeline.stop();
});

async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function publishItem(
  requestId: string,
  inputs: string[],
  blobs: { input: number; name: string; size: bigint; sha256: string }[],
): Promise<void> {
  const item = create(WorkItemSchema, {
    requestId,
    part: 0,
    parts: 1,
    model: MINILM,
    deadlineUnixMs: BigInt(Date.now() + 60_000),
    replySubject: REPLY,
    maxInputTokens: 256,
    totalTokens: 256,
    task: { case: "embed", value: { inputs, truncate: true, blobs } },
  });
  await jetstream(pipeline.nc).publish(
    workSubject("all-minilm-l6-v2", 256),
    toBinary(WorkBundleSchema, create(WorkBundleSchema, { items: [item] })),
  );
}

const answerFor = (id: string): WorkResult | undefined => received.find((r) => r.requestId === id);

it("fetches an offloaded input and embeds it beside an inline one", async () => {
  const text = "offloaded ".repeat(300);
  const blob = await new BlobUploader({ nc: pipeline.nc }).put(new TextEncoder().encode(text));
  await publishItem("fetched", ["", "inline"], [{ ...blob, input: 0, size: BigInt(blob.size) }]);
  await until(() => answerFor("fetched") !== undefined, 60_000);
  const answer = answerFor("fetched");
  expect(answer?.outcome.case).toBe("embed");
  if (answer?.outcome.case !== "embed") return;
  expect(answer.outcome.value.truncated).toEqual([true, false]);
  expect(answer.outcome.value.tokens[0]).toBe(256);
});

it.each([
  ["gone", { name: "no-such-blob", size: 10n, sha256: "0".repeat(64) }],
  ["not the one referenced", { name: "", size: 5n, sha256: "0".repeat(64) }],
])("answers UNAVAILABLE and acks an item whose blob is %s", async (name, ref) => {
  let blobName = ref.name;
  if (blobName === "") {
    blobName = (await new BlobUploader({ nc: pipeline.nc }).put(randomBytes(5))).name;
  }
  const id = `missing-${name.replaceAll(" ", "-")}`;
  await publishItem(id, [""], [{ ...ref, name: blobName, input: 0 }]);
  await until(() => answerFor(id) !== undefined, 60_000);
  const answer = answerFor(id);
  expect(answer?.outcome.case).toBe("error");
  if (answer?.outcome.case !== "error") return;
  expect(answer.outcome.value.code).toBe(ErrorCode.UNAVAILABLE);
  expect(answer.outcome.value.message).toMatch(/offloaded input is no longer available/);
  await until(async () => {
    const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
    return info.num_ack_pending === 0 && info.num_pending === 0;
  }, 30_000);
  // Put back instead of acked, it would come round again and be answered again.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(received.filter((r) => r.requestId === id)).toHaveLength(1);
});
