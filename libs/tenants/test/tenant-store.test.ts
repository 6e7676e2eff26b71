import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import { startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { authenticate, UnauthenticatedError } from "../src/authenticator.js";
import { TENANTS_BUCKET } from "../src/records.js";
import { TenantStore, TenantStoreError } from "../src/tenant-store.js";

// Two stores on one real nats-server stand for the admin side and an ingress on another host:
// what one writes, the other's live copy must show within moments.

const logger = createLogger({ service: "test", level: "silent" });
let nats: NatsServerHandle;
let nc: NatsConnection;
let admin: TenantStore;
let edge: TenantStore;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  admin = await TenantStore.open(nc, logger);
  edge = await TenantStore.open(await connect({ servers: nats.url }), logger);
});

afterAll(async () => {
  admin.stop();
  edge.stop();
  await nc.close();
  await nats.stop();
});

it("creates tenants and keys that another process authenticates, and stops on revoke", async () => {
  await admin.createTenant("acme", { models: ["m1"], admin: [] });
  const { key, record } = await admin.createKey("acme", "ci");
  expect(record).not.toHaveProperty("key");
  expect(JSON.stringify(admin.keys())).not.toContain(key.slice(-43));
  await expect.poll(() => edge.key(record.prefix)?.tenant, { timeout: 5_000 }).toBe("acme");
  expect(authenticate(edge, key)).toMatchObject({ tenant: "acme", keyPrefix: record.prefix });

  await admin.revokeKey(record.prefix);
  await expect
    .poll(
      () => {
        try {
          authenticate(edge, key);
          return "accepted";
        } catch (err) {
          return err instanceof UnauthenticatedError ? "refused" : "error";
        }
      },
      { timeout: 5_000, interval: 20 },
    )
    .toBe("refused");
});

it("rotates a key: the new one works, the old one no longer does", async () => {
  await admin.createTenant("rotor");
  const first = await admin.createKey("rotor", "app");
  const second = await admin.rotateKey(first.record.prefix);
  expect(second.record.label).toBe("app");
  await expect
    .poll(() => edge.key(first.record.prefix)?.revokedAt, { timeout: 5_000 })
    .toBeDefined();
  await expect.poll(() => edge.key(second.record.prefix)?.tenant, { timeout: 5_000 }).toBe("rotor");
  expect(authenticate(edge, second.key).tenant).toBe("rotor");
  expect(() => authenticate(edge, first.key)).toThrow(UnauthenticatedError);
});

it("changes grants everywhere, and refuses what it must", async () => {
  await admin.createTenant("grants");
  await admin.updateTenant("grants", { grants: { models: ["m2"], admin: ["usage"] } });
  await expect.poll(() => edge.tenant("grants")?.grants.models, { timeout: 5_000 }).toEqual(["m2"]);

  const refused = async (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );
  expect(await refused(admin.createTenant("acme"))).toMatchObject({ code: "exists" });
  expect(await refused(admin.createTenant("Bad Name"))).toMatchObject({ code: "invalid" });
  expect(await refused(admin.createKey("nobody", "x"))).toMatchObject({ code: "not_found" });
  expect(await refused(admin.createKey("acme", "x\n"))).toBeInstanceOf(TenantStoreError);
  expect(await refused(admin.revokeKey("zzzzzzzz"))).toMatchObject({ code: "not_found" });
  expect(
    await refused(admin.updateTenant("nobody", { grants: { models: [], admin: [] } })),
  ).toMatchObject({
    code: "not_found",
  });
});

it("ignores a record written by hand that it cannot read, and a new store starts from what is there", async () => {
  const kv = await new Kvm(nc).open(TENANTS_BUCKET);
  await kv.put("key.abcdefgh", "not json");
  await kv.put("tenant.hand", JSON.stringify({ name: "hand", grants: { models: ["*"] } }));
  const late = await TenantStore.open(nc, logger);
  try {
    expect(late.key("abcdefgh")).toBeUndefined();
    expect(late.tenant("hand")).toBeUndefined();
    expect(late.tenant("acme")?.grants.models).toEqual(["m1"]);
    expect(late.keys("acme")).toHaveLength(1);
  } finally {
    late.stop();
  }
});
