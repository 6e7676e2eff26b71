import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { trace, ROOT_CONTEXT } from "@opentelemetry/api";
import { Annotator } from "@shoal/annotation";
import { Gateway, type EmbedOutcome } from "@shoal/gateway";
import { ensureWorkStream } from "@shoal/jetstream";
import { createLogger } from "@shoal/telemetry";
import {
  defaultCatalog,
  sidecarBinary,
  startNatsServer,
  startService,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";

const MINILM = "sentence-transformers/all-MiniLM-L6-v2";
const ACK_WAIT_MS = 3000;

let nats: NatsServerHandle;
let nc: NatsConnection;
let gateway: Gateway;
const workers: ServiceHandle[] = [];

function startWorker(id: string): Promise<ServiceHandle> {
  return startService("worker", {
    env: {
      NATS_URL: nats.url,
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_WORKER_ID: id,
      SHOAL_ACK_WAIT_MS: String(ACK_WAIT_MS),
      // Small batches keep several in flight, so the kill lands mid-stream.
      SHOAL_BATCH_MAX_INPUTS: "4",
    },
    readyMessage: "worker pulling",
  }).then((w) => {
    workers.push(w);
    return w;
  });
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await ensureWorkStream(await jetstreamManager(nc));
  const catalog = defaultCatalog();
  const logger = createLogger({ service: "test", level: "warn" });
  const tracer = trace.getTracer("test");
  gateway = await Gateway.start({
    nc,
    catalog,
    logger,
    defaultTimeoutMs: 60_000,
    annotator: new Annotator({ catalog, js: jetstream(nc), logger, tracer }),
  });
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  await gateway.close();
  await nc.close();
  await nats.stop();
});

it("loses no request when the worker is SIGKILLed with 50 in flight", async () => {
  const first = await startWorker("doomed");
  const texts = Array.from(
    { length: 50 },
    (_, i) =>
      `Request ${i}: ${"the queue keeps what the worker had not acknowledged ".repeat(1 + (i % 5))}`,
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
  const jsm = await jetstreamManager(nc);
  const heldNow = async () =>
    (await jsm.consumers.info("SHOAL_WORK", "work-all-minilm-l6-v2")).num_ack_pending;
  while (answered === 0 || (await heldNow()) === 0) await new Promise((r) => setTimeout(r, 5));
  first.kill("SIGKILL");
  const inFlightAtKill = texts.length - answered;
  await first.exited;
  expect(inFlightAtKill).toBeGreaterThan(0);
  // Work the dead worker had pulled but not acked: only redelivery can answer it.
  expect(await heldNow()).toBeGreaterThan(0);

  await startWorker("replacement");
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
