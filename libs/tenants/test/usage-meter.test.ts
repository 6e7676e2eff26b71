import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { UsageMeter } from "../src/usage-meter.js";

// Two ingress processes' meters against one real nats-server: their counts add up in the
// usage bucket, whoever flushes first, and a flush NATS does not answer loses nothing.

let nats: NatsServerHandle;
let nc: NatsConnection;
const logger = createLogger({ service: "test", level: "silent" });

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await nc.close();
  await nats.stop();
});

it("adds up what every process counted, per tenant and model", async () => {
  const other = await connect({ servers: nats.url });
  const [a, b] = [
    await UsageMeter.open(nc, logger, { flushEveryMs: 60_000 }),
    await UsageMeter.open(other, logger, { flushEveryMs: 60_000 }),
  ];
  for (let i = 0; i < 50; i++) {
    a.record("acme", "org/emb", "emb", 10, 0);
    b.record("acme", "org/emb", "emb", 5, 0);
  }
  b.record("acme", "org/gen", "gen", 7, 30);
  a.record("globex", "org/emb", "emb", 1, 0);
  // Concurrent flushes of the same entry: compare-and-set makes one wait for the other.
  await Promise.all([a.flush(), b.flush(), a.flush()]);
  expect(await a.read("acme")).toEqual([
    expect.objectContaining({ tenant: "acme", model: "org/emb", requests: 100, inputTokens: 750 }),
    expect.objectContaining({ model: "org/gen", requests: 1, inputTokens: 7, outputTokens: 30 }),
  ]);
  expect((await b.read()).map((r) => r.tenant)).toEqual(["acme", "acme", "globex"]);
  await a.stop();
  await b.stop();
  await other.close();
});

it("keeps what it could not write for the next flush", async () => {
  const meter = await UsageMeter.open(nc, logger, { flushEveryMs: 60_000 });
  meter.record("initech", "org/emb", "emb", 3, 0);
  // A server that answers nothing: the flush times out.
  process.kill(nats.pid, "SIGSTOP");
  try {
    await meter.flush();
  } finally {
    process.kill(nats.pid, "SIGCONT");
  }
  await expect
    .poll(
      async () => {
        await meter.flush();
        return (await meter.read("initech"))[0]?.inputTokens;
      },
      // A machine busy with other builds (CI runs the Rust builds beside these tests) can take
      // a while to get the connection back after the server resumes.
      { timeout: 40_000, interval: 500 },
    )
    .toBe(3);
  await meter.stop();
}, 60_000);
