import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { connectNats, ensureWorkStream } from "@shoal/jetstream";
import { ADAPTER_INDEX_BUCKET } from "@shoal/adapters";
import { RESIDENCY_BUCKET } from "@shoal/residency";
import { createLogger } from "@shoal/telemetry";
import { TENANTS_BUCKET } from "@shoal/tenants";
import { startNatsServer, tempDir, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapNats } from "./nats-bootstrap.js";
import { writeNatsAuth, type NatsUser } from "./nats-users.js";

// Each service kind's NATS user against a real nats-server running the generated
// authorization block, after the bootstrap user made the streams and buckets: what each may
// do for its job, and what it may not (the real services run under these users in the
// npm start tests).

let nats: NatsServerHandle;
let passwords: Record<NatsUser, string>;
const open: NatsConnection[] = [];

async function as(user: NatsUser): Promise<NatsConnection> {
  // As the services connect: with the user's own inbox prefix.
  const nc = await connectNats(nats.url, `test-${user}`, { user, password: passwords[user] });
  open.push(nc);
  return nc;
}

/** Rejects (a permissions violation, or no answer) within a few seconds. */
async function refused(what: Promise<unknown>): Promise<string> {
  const outcome = await what.then(
    () => "allowed",
    (err: unknown) => String(err),
  );
  expect(outcome).not.toBe("allowed");
  return outcome;
}

/** What the server reports back about `subject` (a permissions violation), once it does. */
async function violation(nc: NatsConnection, subject: string): Promise<string> {
  for await (const s of nc.status()) {
    if (s.type === "error" && String(s.error).includes(`"${subject}"`)) return String(s.error);
  }
  return "";
}

/** A core publish to `subject` is reported back as a permissions violation. */
async function publishRefused(nc: NatsConnection, subject: string): Promise<void> {
  const reported = violation(nc, subject);
  nc.publish(subject, "x");
  await nc.flush();
  expect(await reported).toMatch(/Permissions Violation for Publish/);
}

/** So is a subscription to it. */
async function subscribeRefused(nc: NatsConnection, subject: string): Promise<void> {
  const reported = violation(nc, subject);
  nc.subscribe(subject);
  await nc.flush();
  expect(await reported).toMatch(/Permissions Violation for Subscription/);
}

const jsmOf = (nc: NatsConnection) => jetstreamManager(nc, { timeout: 2000 });

beforeAll(async () => {
  const dir = await tempDir("nats-users");
  passwords = await writeNatsAuth(dir);
  nats = await startNatsServer({ args: ["-c", join(dir, "auth.conf")] });
  await bootstrapNats(await as("bootstrap"), createLogger({ service: "test", level: "warn" }));
}, 60_000);

afterAll(async () => {
  for (const nc of open) await nc.close();
  await nats.stop();
});

describe("NATS users", { timeout: 30_000 }, () => {
  it("refuses anonymous clients and wrong passwords", async () => {
    await refused(connect({ servers: nats.url, reconnect: false }));
    await refused(
      connect({ servers: nats.url, reconnect: false, user: "worker", pass: passwords.ingress }),
    );
  });

  it("ingress queues work, and may not take it, answer it, delete the stream or load models", async () => {
    const nc = await as("ingress");
    const ack = await jetstream(nc).publish("shoal.work.v1.m.b16", "item");
    expect(ack.stream).toBe("SHOAL_WORK");
    const jsm = await jsmOf(nc);
    expect((await jsm.streams.info("SHOAL_WORK")).config.name).toBe("SHOAL_WORK");
    await refused(jsm.streams.delete("SHOAL_WORK"));
    await refused(jsm.streams.update("SHOAL_WORK", { max_age: 1 }));
    await refused(
      jsm.consumers.add("SHOAL_WORK", { durable_name: "thief", filter_subject: "shoal.work.v1.>" }),
    );
    await publishRefused(nc, "shoal.reply.v1.other-ingress");
    await publishRefused(nc, "shoal.control.v1.worker-1");
    // Work is pulled through consumers, never read off the subjects directly.
    await subscribeRefused(nc, "shoal.work.v1.>");
  });

  it("gets its replies under its own inbox, and may not read another user's", async () => {
    const nc = await as("blob-offloader");
    await subscribeRefused(nc, "_INBOX.>");
    await subscribeRefused(nc, "_INBOX_ingress.>");
    await subscribeRefused(nc, ">");
  });

  it("a worker pulls its models' work, and may not delete or change streams, forge requests or read keys", async () => {
    const nc = await as("worker");
    const jsm = await jsmOf(nc);
    await jsm.consumers.add("SHOAL_WORK", {
      durable_name: "work-m",
      filter_subject: "shoal.work.v1.m.>",
      ack_policy: "explicit" as never,
    });
    const consumer = await jetstream(nc).consumers.get("SHOAL_WORK", "work-m");
    const item = await consumer.next({ expires: 2000 });
    expect(item?.subject).toBe("shoal.work.v1.m.b16");
    item?.ack();
    await refused(jsm.streams.delete("SHOAL_WORK"));
    await refused(jsm.streams.purge("SHOAL_WORK"));
    await refused(jsm.streams.add({ name: "EVIL", subjects: ["evil.>"] }));
    // A consumer over everyone's work is not a model's consumer.
    await refused(
      jsm.consumers.add("SHOAL_WORK", { durable_name: "all", filter_subject: "shoal.work.v1.>" }),
    );
    // It puts an item back for another attempt, but cannot queue work of its own.
    await jetstream(nc).publish("shoal.work.v1.m.b16.retry", "again");
    await publishRefused(nc, "shoal.work.v1.m.b16");
    await publishRefused(nc, "shoal.want.v1.m");
    await publishRefused(nc, "shoal.control.v1.worker-2");
    await refused(new Kvm(nc).open(TENANTS_BUCKET).then((kv) => kv.get("tenant.acme")));
    await refused(new Kvm(nc).open(RESIDENCY_BUCKET).then((kv) => kv.put("replica.x", "1")));
  });

  it("the registry writes adapters only; the offloader blobs only; the local queue acks only", async () => {
    const registry = await as("lora-registry");
    const index = await new Kvm(registry).open(ADAPTER_INDEX_BUCKET);
    await index.put("m.bot", "{}");
    await publishRefused(registry, "shoal.work.v1.m.b16");
    await refused(new Kvm(registry).open(TENANTS_BUCKET).then((kv) => kv.put("tenant.x", "{}")));
    await refused((await jsmOf(registry)).streams.info("SHOAL_WORK"));

    const offloader = await as("blob-offloader");
    await publishRefused(offloader, "shoal.work.v1.m.b16");
    await refused((await jsmOf(offloader)).streams.info("KV_SHOAL_TENANTS"));

    const local = await as("local-queue");
    await publishRefused(local, "shoal.work.v1.m.b16");
    await publishRefused(local, "shoal.reply.v1.some-ingress");
  });

  it("the model-loader and the keys CLI keep to their buckets", async () => {
    const loader = await as("model-loader");
    await (await new Kvm(loader).open(RESIDENCY_BUCKET)).put("replica.local.m", "{}");
    await publishRefused(loader, "shoal.work.v1.m.b16");
    await refused((await jsmOf(loader)).streams.delete("SHOAL_WORK"));

    const keys = await as("keys");
    await (await new Kvm(keys).open(TENANTS_BUCKET)).create("tenant.probe", "{}");
    await refused(new Kvm(keys).open(RESIDENCY_BUCKET).then((kv) => kv.get("replica.local.m")));
    await publishRefused(keys, "shoal.work.v1.m.b16");
  });

  it("the console reads the queue, residency and heartbeats, and may change or take nothing", async () => {
    const nc = await as("console");
    const jsm = await jsmOf(nc);
    const info = await jsm.streams.info("SHOAL_WORK", { subjects_filter: "shoal.work.v1.>" });
    expect(info.config.name).toBe("SHOAL_WORK");
    await jsm.streams.info("SHOAL_DEAD");
    const residency = await new Kvm(nc).open(RESIDENCY_BUCKET);
    const watch = await residency.watch({ key: ">" });
    watch.stop();
    const heartbeats = nc.subscribe("shoal.heartbeat.v1.*");
    await nc.flush();
    heartbeats.unsubscribe();
    await refused(residency.put("replica.x", "1"));
    await refused(jsm.streams.purge("SHOAL_WORK"));
    await refused(jsm.consumers.add("SHOAL_WORK", { durable_name: "peek" }));
    await publishRefused(nc, "$JS.API.CONSUMER.MSG.NEXT.SHOAL_WORK.work-m");
    await publishRefused(nc, "shoal.work.v1.m.b16");
    await publishRefused(nc, "shoal.control.v1.worker-1");
    await publishRefused(nc, "shoal.heartbeat.v1.n1");
    await refused(new Kvm(nc).open(TENANTS_BUCKET).then((kv) => kv.get("tenant.acme")));
  });

  it("a service started before the bootstrap says which stream is missing and who makes it", async () => {
    const logger = createLogger({ service: "test", level: "warn" });
    await (await jsmOf(await as("bootstrap"))).streams.delete("SHOAL_WORK");
    try {
      await expect(ensureWorkStream(await jsmOf(await as("ingress")))).rejects.toThrow(
        /stream SHOAL_WORK does not exist and could not be made .*the NATS bootstrap makes it/,
      );
    } finally {
      await bootstrapNats(await as("bootstrap"), logger);
    }
  });
});
