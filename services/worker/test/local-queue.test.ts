import { join } from "node:path";
import { ROOT_CONTEXT } from "@opentelemetry/api";
import type { EmbedOutcome } from "@shoal/gateway";
import { ensureModelConsumer, pull } from "@shoal/jetstream";
import { LocalQueueClient } from "@shoal/local-queue";
import { startService, tempDir, type ServiceHandle } from "@shoal/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MINILM, MINILM_CONSUMER, startPipeline, type Pipeline } from "./support.js";

let pipeline: Pipeline;
let socketPath: string;
let queue: ServiceHandle | undefined;

beforeEach(async () => {
  // One message per request: the tests follow put-backs message by message.
  pipeline = await startPipeline({ partMaxInputs: 1 });
  socketPath = join(await tempDir("lqw"), "local-queue.sock");
});

afterEach(async () => {
  await pipeline.stop();
  await queue?.stop();
  queue = undefined;
});

function startLocalQueue(env: Readonly<Record<string, string>> = {}): Promise<ServiceHandle> {
  return startService("local-queue", {
    env: { NATS_URL: pipeline.nats.url, SHOAL_LOCAL_QUEUE_SOCKET: socketPath, ...env },
    readyMessage: "local queue listening",
  });
}

const sim = { SHOAL_SIDECAR_BACKEND: "sim" };

function texts(n: number, tag: string): string[] {
  return Array.from(
    { length: n },
    (_, i) =>
      `${tag} ${i}: ${"workers on one host share what they over-pulled ".repeat(1 + (i % 6))}`,
  );
}

function embedAll(inputs: readonly string[]): Promise<EmbedOutcome>[] {
  const calls = inputs.map((text) =>
    pipeline.gateway.embed({ model: MINILM, inputs: [text] }, ROOT_CONTEXT),
  );
  // A failed assertion must not leave the rest rejected and unhandled.
  for (const c of calls) c.catch(() => undefined);
  return calls;
}

function row(o: EmbedOutcome, i: number): Float32Array {
  const start = o.embeddings.byteOffset + i * o.dim * 4;
  return new Float32Array(o.embeddings.buffer.slice(start, start + o.dim * 4));
}

/** Every answer is its own input's: the same texts in one request give the same vectors. */
async function expectOwnAnswers(inputs: readonly string[], outcomes: readonly EmbedOutcome[]) {
  const together = await pipeline.gateway.embed({ model: MINILM, inputs }, ROOT_CONTEXT);
  outcomes.forEach((outcome, i) => {
    const a = row(outcome, 0);
    const b = row(together, i);
    expect(
      a.reduce((dot, x, k) => dot + x * (b[k] ?? 0), 0),
      `request ${i}`,
    ).toBeGreaterThanOrEqual(0.9999);
  });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("machine-local queue", () => {
  it("a worker takes and answers what another holder put back, with no network redelivery", async () => {
    queue = await startLocalQueue({ SHOAL_LOCAL_QUEUE_HOLD_MS: "120000" });
    const { jsm, nc } = pipeline;
    await ensureModelConsumer(jsm, "SHOAL_WORK", "all-minilm-l6-v2");
    const inputs = texts(12, "handed");
    const calls = embedAll(inputs);
    // This test process plays the worker that over-pulled: it pulls everything and puts it
    // into the local queue. No worker exists yet, so only the hand-off can answer.
    const pulled = [];
    while (pulled.length < inputs.length) {
      pulled.push(
        ...(await pull(nc, "SHOAL_WORK", MINILM_CONSUMER, { batch: 12, expiresMs: 1000 })),
      );
    }
    const client = new LocalQueueClient({ socketPath });
    try {
      expect(
        await client.put(
          "all-minilm-l6-v2",
          pulled.map((m) => m.handOff()),
        ),
      ).toBe(12);
      await pipeline.startWorker("taker", { ...sim, SHOAL_LOCAL_QUEUE_SOCKET: socketPath });
      const outcomes = await Promise.all(calls);
      await expectOwnAnswers(inputs, outcomes);
      expect(await client.stats()).toMatchObject({
        held: 0,
        accepted: 12,
        handed: 12,
        returned: 0,
      });
      const info = await jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
      expect(info.num_redelivered).toBe(0);
      expect(pipeline.gateway.duplicateAnswers).toBe(0);
    } finally {
      await client.close();
    }
  }, 180_000);

  it("two simulated workers share their put-backs: every request answered once, none over the network", async () => {
    queue = await startLocalQueue({ SHOAL_LOCAL_QUEUE_HOLD_MS: "20000" });
    // A small padded-token ceiling makes each worker pull more than one batch takes.
    const env = {
      ...sim,
      SHOAL_LOCAL_QUEUE_SOCKET: socketPath,
      SHOAL_BATCH_MAX_PADDED_TOKENS: "256",
    };
    await pipeline.startWorker("left", env);
    await pipeline.startWorker("right", env);
    const inputs = texts(150, "shared");
    const outcomes = await Promise.all(embedAll(inputs));
    await expectOwnAnswers(inputs, outcomes);
    const client = new LocalQueueClient({ socketPath });
    try {
      const stats = await client.stats();
      expect(stats.accepted).toBeGreaterThan(0);
      expect(stats.handed).toBe(stats.accepted);
      expect(stats.returned).toBe(0);
    } finally {
      await client.close();
    }
    // Put-backs went through the local queue, never NAKed over the network.
    const info = await pipeline.jsm.consumers.info("SHOAL_WORK", MINILM_CONSUMER);
    expect(info.num_redelivered).toBe(0);
    expect(pipeline.gateway.duplicateAnswers).toBe(0);
    expect(pipeline.gateway.pending).toBe(0);
  }, 180_000);

  it("loses nothing when a MiniLM worker is SIGKILLed while the local queue holds its put-backs", async () => {
    queue = await startLocalQueue({
      SHOAL_LOCAL_QUEUE_HOLD_MS: "60000",
      // Under a third of the workers' 3 s ack wait, so held items are not redelivered meanwhile.
      SHOAL_LOCAL_QUEUE_PROGRESS_MS: "800",
    });
    const env = {
      SHOAL_LOCAL_QUEUE_SOCKET: socketPath,
      SHOAL_ACK_WAIT_MS: "3000",
      SHOAL_BATCH_MAX_PADDED_TOKENS: "128",
    };
    const doomed = await pipeline.startWorker("doomed", env);
    const inputs = texts(40, "killed");
    const calls = embedAll(inputs);
    const client = new LocalQueueClient({ socketPath });
    try {
      // Frozen while the queue holds its put-backs, so it cannot take them back before it dies.
      for (;;) {
        await until("put-backs held", async () => (await client.stats()).held > 0);
        doomed.kill("SIGSTOP");
        if ((await client.stats()).held > 0) break;
        doomed.kill("SIGCONT");
      }
      doomed.kill("SIGKILL");
      await doomed.exited;
      expect((await client.stats()).held).toBeGreaterThan(0);
      await pipeline.startWorker("replacement", env);
      const outcomes = await Promise.all(calls);
      await expectOwnAnswers(inputs, outcomes);
      expect(pipeline.gateway.pending).toBe(0);
    } finally {
      await client.close();
    }
  }, 240_000);

  it("loses nothing when the local queue itself is SIGKILLed holding items", async () => {
    queue = await startLocalQueue({
      SHOAL_LOCAL_QUEUE_HOLD_MS: "60000",
      // Under a third of the workers' 3 s ack wait, so held items are not redelivered meanwhile.
      SHOAL_LOCAL_QUEUE_PROGRESS_MS: "800",
    });
    const env = {
      ...sim,
      SHOAL_LOCAL_QUEUE_SOCKET: socketPath,
      SHOAL_ACK_WAIT_MS: "3000",
      SHOAL_BATCH_MAX_PADDED_TOKENS: "128",
    };
    await pipeline.startWorker("survivor", env);
    const inputs = texts(60, "queue-killed");
    const calls = embedAll(inputs);
    const client = new LocalQueueClient({ socketPath });
    try {
      await until("put-backs held", async () => (await client.stats()).held > 0);
    } finally {
      await client.close();
    }
    queue.kill("SIGKILL");
    await queue.exited;
    queue = undefined;
    // The worker carries on over JetStream; what the queue held comes back after the ack wait.
    const outcomes = await Promise.all(calls);
    await expectOwnAnswers(inputs, outcomes);
    expect(pipeline.gateway.pending).toBe(0);
  }, 240_000);
});
