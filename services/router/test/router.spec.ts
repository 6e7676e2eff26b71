import { create, toBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  ROUTED_STREAM,
  WORK_STREAM,
  ensureRoutedConsumer,
  pull,
  workSubject,
} from "@shoal/jetstream";
import { WorkResultsSchema } from "@shoal/proto";
import type { RoutingPolicy } from "@shoal/router";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy, parseWorkers, run, type RunningRouter } from "../src/run.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let router: RunningRouter | undefined;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

afterEach(async () => {
  if (router === undefined) return;
  await router.stop();
  router = undefined;
  // Every test starts from empty streams and consumers (the router creates them).
  for (const stream of [WORK_STREAM, ROUTED_STREAM]) await jsm.streams.delete(stream);
});

const WORKERS = new Map([
  ["w1", ["m"]],
  ["w2", ["m"]],
]);

async function startRouter(policy: RoutingPolicy, refreshMs = 5): Promise<void> {
  router = await run({
    natsServers: nats.url,
    policy,
    refreshMs,
    workers: WORKERS,
    logger: createLogger({ service: "router-test", level: "warn" }),
  });
}

async function enqueue(count: number, model = "m"): Promise<void> {
  const js = jetstream(nc);
  for (let i = 0; i < count; i++) await js.publish(workSubject(model, 32), new Uint8Array([i]));
}

/** What a worker finds on its routed subject for `m`, acked, within `ms`. */
async function take(worker: string, ms = 1500): Promise<Uint8Array[]> {
  const consumer = await ensureRoutedConsumer(jsm, ROUTED_STREAM, worker, "m");
  const got: Uint8Array[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const messages = await pull(nc, ROUTED_STREAM, consumer, { batch: 100, expiresMs: 200 });
    for (const m of messages) {
      got.push(m.data);
      m.ack();
    }
  }
  return got;
}

/**
 * The answers `worker` would send for `n` items, as the router sees them on reply subjects:
 * some in one message, as a batch's answers travel, and the rest one a message.
 */
function answer(worker: string, n: number): void {
  const batched = Math.floor(n / 2);
  const results = (k: number) =>
    toBinary(
      WorkResultsSchema,
      create(WorkResultsSchema, {
        results: Array.from({ length: k }, () => ({ workerId: worker })),
      }),
    );
  if (batched > 0) nc.publish("shoal.reply.v1.test-ingress", results(batched));
  for (let i = batched; i < n; i++) nc.publish("shoal.reply.v1.test-ingress", results(1));
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("router service", () => {
  it("moves every item to one worker's subject, round-robin in turn", async () => {
    await startRouter("round-robin");
    await enqueue(10);
    await until(() => router?.router.routed === 10);
    const [a, b] = await Promise.all([take("w1"), take("w2")]);
    expect(a).toHaveLength(5);
    expect(b).toHaveLength(5);
    // The items themselves, each once.
    expect([...a, ...b].map((d) => d[0]).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    // Nothing stays on the work stream.
    expect((await jsm.streams.info(WORK_STREAM)).state.messages).toBe(0);
  });

  /**
   * Four items split two and two; w1 answers its two while w2 stays silent; then two more.
   * Returns how many each worker got in all.
   */
  async function fourThenTwoAfterW1Answers(refreshMs: number): Promise<number[]> {
    await startRouter("least-outstanding", refreshMs);
    await enqueue(4);
    await until(() => router?.router.routed === 4);
    answer("w1", 2);
    await new Promise((r) => setTimeout(r, 50));
    await enqueue(2);
    await until(() => router?.router.routed === 6);
    return (await Promise.all([take("w1"), take("w2")])).map((got) => got.length);
  }

  it("least-outstanding sends new work to the worker whose answers it has seen", async () => {
    // Refreshed every 5 ms, the view shows w1 idle: both new items go there.
    expect(await fourThenTwoAfterW1Answers(5)).toEqual([4, 2]);
  });

  it("a stale view herds: without a refresh, answers change nothing", async () => {
    expect(await fourThenTwoAfterW1Answers(60_000)).toEqual([3, 3]);
  });

  it("holds the items of a model no worker serves on the work stream", async () => {
    await startRouter("power-of-two");
    await enqueue(3, "unserved");
    await enqueue(2);
    await until(() => router?.router.routed === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect((await jsm.streams.info(WORK_STREAM)).state.messages).toBe(3);
  });
});

describe("router configuration", () => {
  it("reads workers and their models", () => {
    expect(parseWorkers("w1=a,b; w2=b")).toEqual(
      new Map([
        ["w1", ["a", "b"]],
        ["w2", ["b"]],
      ]),
    );
  });

  it("reads no workers at all, for an autoscaler to place models", () => {
    expect(parseWorkers("")).toEqual(new Map());
  });

  it.each(["w1", "w1=", "=a", "w1=a=b", "w1=a;w1=b"])("refuses workers %j", (spec) => {
    expect(() => parseWorkers(spec)).toThrow(/SHOAL_ROUTER_WORKERS/);
  });

  it("reads a policy and refuses an unknown one", () => {
    expect(parsePolicy("power-of-two")).toBe("power-of-two");
    expect(parsePolicy("random")).toBe("random");
    expect(() => parsePolicy("hash")).toThrow(
      /round-robin, least-outstanding, power-of-two, random/,
    );
  });
});
