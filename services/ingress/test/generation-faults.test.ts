import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DEAD_LETTER_STREAM, Headers, WORK_STREAM, workSubject } from "@shoal/jetstream";
import { sidecarPidOf, type ServiceHandle } from "@shoal/testing";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SMOLLM2,
  startGenerationCluster,
  type GenerationCluster,
} from "./support/generation-cluster.js";

// Streaming generation when its parts die: the real cluster serving SmolLM2 on the real
// sidecar, workers as processes that the tests SIGKILL (or their sidecars), and the official
// `openai` SDK as the client. A client must get either the whole answer or a clear error,
// never a stream that ends early as if complete, and never text of two runs spliced together.

const SMOLLM2_KEY = "smollm2-135m-instruct";
const CONSUMER = `work-${SMOLLM2_KEY}`;
/** A prompt the greedy model keeps continuing, so a stream runs long enough to be cut. */
const COUNTING = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,";
const MAX_TOKENS = 120;
/** Short, so a stream whose worker died ends in seconds rather than the default minute. */
const STREAM_IDLE_MS = 3_000;
const ACK_WAIT_MS = 3_000;

let cluster: GenerationCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let client: OpenAI;
/** The answer to COUNTING when nothing fails. */
let whole = "";
/** The worker that takes over once the cluster's first has been killed. */
let standby: ServiceHandle | undefined;

beforeAll(async () => {
  cluster = await startGenerationCluster({
    env: { SHOAL_ACK_WAIT_MS: String(ACK_WAIT_MS) },
    ingress: { streamIdleTimeoutMs: STREAM_IDLE_MS },
  });
  nc = await connect({ servers: cluster.nats.url });
  jsm = await jetstreamManager(nc);
  client = new OpenAI({ baseURL: `${cluster.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 });
  whole = await complete(COUNTING);
}, 360_000);

afterAll(async () => {
  await nc.close();
  await cluster.stop();
});

async function complete(prompt: string, maxTokens = MAX_TOKENS): Promise<string> {
  const res = await client.completions.create({
    model: SMOLLM2,
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
  });
  expect(res.choices[0]?.finish_reason).toBe("length");
  return res.choices[0]?.text ?? "";
}

interface Streamed {
  readonly text: string;
  readonly finish: string | null | undefined;
  /** What the SDK raised; undefined when the stream ended normally. */
  readonly error: unknown;
}

/** Streams `prompt`, calling `after` once the third piece of text has arrived. */
async function stream(
  prompt: string,
  after: () => void = () => undefined,
  maxTokens = MAX_TOKENS,
): Promise<Streamed> {
  let text = "";
  let finish: string | null | undefined;
  let pieces = 0;
  try {
    const chunks = await client.completions.create({
      model: SMOLLM2,
      prompt,
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
    });
    for await (const chunk of chunks) {
      const choice = chunk.choices[0];
      if (choice?.text) {
        text += choice.text;
        if (++pieces === 3) after();
      }
      finish = choice?.finish_reason ?? finish;
    }
  } catch (error) {
    return { text, finish, error };
  }
  return { text, finish, error: undefined };
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Nothing of the model's work is queued or held: every item was finished and acked. */
async function workSettled(): Promise<boolean> {
  const info = await jsm.consumers.info(WORK_STREAM, CONSUMER);
  return info.num_pending === 0 && info.num_ack_pending === 0;
}

async function deadLetters(): Promise<{ reason: string; deliveries: string; data: Uint8Array }[]> {
  const info = await jsm.streams.info(DEAD_LETTER_STREAM);
  const out = [];
  for (
    let seq = info.state.first_seq;
    info.state.messages > 0 && seq <= info.state.last_seq;
    seq++
  ) {
    const m = await jsm.streams.getMessage(DEAD_LETTER_STREAM, { seq });
    if (m === null) continue;
    out.push({
      reason: m.header.get(Headers.deadReason),
      deliveries: m.header.get(Headers.deadDeliveries),
      data: m.data,
    });
  }
  return out;
}

/** The stream ended in an error the SDK raised, after a strict prefix of the whole answer. */
function expectCutShort(result: Streamed): void {
  expect(result.error, `stream ended normally with ${JSON.stringify(result.text)}`).toBeInstanceOf(
    APIError,
  );
  expect(result.finish ?? undefined).toBeUndefined();
  expect(result.text.length).toBeGreaterThan(0);
  expect(result.text.length).toBeLessThan(whole.length);
  expect(whole.startsWith(result.text)).toBe(true);
}

describe("a sidecar dies", { timeout: 120_000 }, () => {
  it("mid-stream: the client gets an error after part of the answer, and the worker recovers", async () => {
    const worker = cluster.worker;
    const sidecar = sidecarPidOf(worker.pid);
    const result = await stream(COUNTING, () => {
      process.kill(sidecar, "SIGKILL");
    });
    expectCutShort(result);
    expect((result.error as APIError).message).toMatch(/retry the request/);
    // Answered and acked, not left for redelivery into a stream that already failed.
    await until(workSettled, 10_000);
    // The worker replaced its sidecar: the same request now gets the whole answer.
    expect(await complete(COUNTING)).toBe(whole);
    expect(sidecarPidOf(worker.pid)).not.toBe(sidecar);
  });

  it("before the first token: the work runs again and the client gets the whole answer", async () => {
    // A long prompt keeps the sidecar in its prefill for a while, where the kill lands.
    const prompt = `${"The quick brown fox jumps over the lazy dog. ".repeat(20)}${COUNTING}`;
    const expected = await complete(prompt, 16);
    const worker = cluster.worker;
    const sidecar = sidecarPidOf(worker.pid);
    const answer = stream(prompt, undefined, 16);
    await until(
      async () => (await jsm.consumers.info(WORK_STREAM, CONSUMER)).num_ack_pending > 0,
      30_000,
    );
    process.kill(sidecar, "SIGKILL");
    const result = await answer;
    expect(result.error).toBeUndefined();
    expect(result.finish).toBe("length");
    expect(result.text).toBe(expected);
    expect(worker.output()).toMatch(/generation failed before its first event; retrying/);
    await until(workSettled, 10_000);
  });
});

describe("a worker dies", { timeout: 180_000 }, () => {
  it("mid-stream: the client gets an error, and the redelivered work is cancelled, not spliced in", async () => {
    const first = cluster.worker;
    const result = await stream(COUNTING, () => {
      first.kill("SIGKILL");
    });
    expectCutShort(result);
    expect((result.error as APIError).message).toMatch(/stalled/);
    // The item comes back after the ack wait to a worker started since; the stream it belonged
    // to has ended, so ingress cancels that second attempt at its first event.
    standby = await cluster.startWorker("worker-2");
    await until(workSettled, 60_000);
    // Told by ingress, not given up by the worker's own stall timer on a stream nobody reads.
    expect(standby.output()).toMatch(
      /"reason":"cancelled by ingress".*"msg":"generation cancelled"/,
    );
    expect(await complete(COUNTING)).toBe(whole);
  });

  it("again and again: the work is given up after max deliveries and dead-lettered", async () => {
    // The worker started by the test before dies running it; the next one allows a single
    // delivery, so the item's second is given up rather than run again.
    const result = await stream(COUNTING, () => {
      standby?.kill("SIGKILL");
    });
    expectCutShort(result);
    await cluster.startWorker("worker-3", { SHOAL_MAX_DELIVER: "1" });
    await until(
      async () => (await deadLetters()).some((d) => d.reason === "too many deliveries"),
      60_000,
    );
    const dead = (await deadLetters()).find((d) => d.reason === "too many deliveries");
    expect(dead?.deliveries).toBe("2");
    await until(workSettled, 10_000);
  });
});

describe("poison generation work", { timeout: 60_000 }, () => {
  it("dead-letters a malformed generation item without running it", async () => {
    const garbage = new Uint8Array([0x0a, 0xff, 0xff, 0xff]);
    await jetstream(nc).publish(workSubject(SMOLLM2_KEY, 0), garbage);
    await until(
      async () => (await deadLetters()).some((d) => d.reason === "malformed work item"),
      20_000,
    );
    const dead = (await deadLetters()).find((d) => d.reason === "malformed work item");
    expect(dead?.data).toEqual(garbage);
    await until(workSettled, 10_000);
  });
});
