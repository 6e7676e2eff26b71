import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  ROUTED_STREAM,
  WORK_STREAM,
  ensureRoutedConsumer,
  pull,
  workSubject,
} from "@shoal/jetstream";
import {
  controlSubject,
  decodeControlRequest,
  encodeControl,
  heartbeatSubject,
} from "@shoal/residency";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { run, type RouterServiceOptions, type RunningRouter } from "../src/run.js";

/**
 * The router's replica autoscaler against a real nats-server, with two stand-in accelerators
 * that answer the control protocol the way workers do (load, unload, heartbeats): a model
 * with work gets a replica, more lag gets more, and an idle one is drained and unloaded.
 */
let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let router: RunningRouter;
const GB = 1e9;
/** What each stand-in accelerator was told, in order. */
const told: string[] = [];
const held = new Map<string, Set<string>>([
  ["w1", new Set()],
  ["w2", new Set()],
]);
let beats: NodeJS.Timeout;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  for (const [worker, models] of held) {
    nc.subscribe(controlSubject(worker), {
      callback: (_err, msg) => {
        const req = decodeControlRequest(msg.data);
        told.push(`${worker} ${req.op} ${req.model}`);
        if (req.op === "load") models.add(req.model);
        else models.delete(req.model);
        msg.respond(encodeControl({ ok: true }));
      },
    });
  }
  const beat = (): void => {
    for (const [worker, models] of held) {
      nc.publish(
        heartbeatSubject("node-a"),
        encodeControl({
          worker,
          node: "node-a",
          capacityBytes: 10 * GB,
          models: [...models].map((model) => ({
            model,
            state: "resident",
            memoryBytes: 2 * GB,
            items: 0,
          })),
        }),
      );
    }
  };
  beats = setInterval(beat, 100);
  router = await startRouter({
    node: "node-a",
    models: new Map([["m", 2 * GB]]),
    policy: { targetLagPerReplica: 4, minReplicas: 0, scaleDownWindowMs: 500 },
    syncMs: 100,
  });
});

/** The router with an autoscaler over the two stand-in accelerators. */
function startRouter(autoscale: RouterServiceOptions["autoscale"]): Promise<RunningRouter> {
  return run({
    natsServers: nats.url,
    policy: "least-outstanding",
    refreshMs: 5,
    workers: new Map(),
    autoscale,
    logger: createLogger({ service: "autoscaler-test", level: "warn" }),
  });
}

afterAll(async () => {
  clearInterval(beats);
  await router.stop();
  await nc.close();
  await nats.stop();
});

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`condition not met in time; told: ${told.join("; ")}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

it("loads a replica for held work, adds one as lag grows, and drains and unloads when idle", async () => {
  const js = jetstream(nc);
  await js.publish(workSubject("m", 32), new Uint8Array([0]));
  // No replica: the router holds the item until the autoscaler has loaded one.
  await until(() => told.length === 1);
  expect(told[0]).toMatch(/^w[12] load m$/);
  await until(() => router.router.routed === 1);

  // Ten more, left unanswered on the routed subjects: lag 11 over a target of 4 wants 3
  // replicas, and two accelerators are all there is.
  for (let i = 1; i <= 10; i++) await js.publish(workSubject("m", 32), new Uint8Array([i]));
  await until(() => told.filter((t) => t.endsWith("load m")).length === 2);
  expect(new Set(told.map((t) => t.split(" ")[0]))).toEqual(new Set(["w1", "w2"]));

  // The workers take and ack everything: no lag, and after the window both replicas go
  // (minimum 0), each only once its queue is empty.
  await until(() => router.router.routed === 11);
  for (const worker of ["w1", "w2"]) {
    const consumer = await ensureRoutedConsumer(jsm, ROUTED_STREAM, worker, "m");
    for (const m of await pull(nc, ROUTED_STREAM, consumer, { batch: 100, expiresMs: 300 }))
      m.ack();
  }
  await until(() => told.filter((t) => t.endsWith("unload m")).length === 2);
  expect(held.get("w1")?.size).toBe(0);
  expect(held.get("w2")?.size).toBe(0);
  expect((await jsm.streams.info(WORK_STREAM)).state.messages).toBe(0);
  expect((await jsm.streams.info(ROUTED_STREAM)).state.messages).toBe(0);
}, 30_000);

it("with fillMemory, gives a model with arrivals but little lag the memory an idle one leaves", async () => {
  await router.stop();
  told.length = 0;
  router = await startRouter({
    node: "node-a",
    models: new Map([
      ["m", 2 * GB],
      ["n", 2 * GB],
    ]),
    // A target no lag here reaches: only the arrival rate can add a replica.
    policy: { targetLagPerReplica: 100, scaleDownWindowMs: 60_000, fillMemory: true },
    syncMs: 100,
    demandWindowMs: 2000,
  });
  // The minimum first: one replica each, on different accelerators (most free memory).
  await until(() => told.length === 2);
  expect(told.map((t) => t.split(" ").slice(1).join(" ")).sort()).toEqual(["load m", "load n"]);
  const js = jetstream(nc);
  for (let i = 0; i < 5; i++) await js.publish(workSubject("m", 32), new Uint8Array([i]));
  await until(() => router.router.routed === 5);
  // m's arrivals earn it the free memory: a second replica, on the accelerator it lacked.
  await until(() => told.filter((t) => t.endsWith("load m")).length === 2);
  expect(new Set(told.filter((t) => t.endsWith("load m")).map((t) => t.split(" ")[0]))).toEqual(
    new Set(["w1", "w2"]),
  );
  expect(told.filter((t) => t.endsWith("load n"))).toHaveLength(1);
}, 30_000);
