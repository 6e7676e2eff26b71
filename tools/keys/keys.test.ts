import { execFile } from "node:child_process";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createLogger } from "@shoal/telemetry";
import { authenticate, TenantStore, UnauthenticatedError } from "@shoal/tenants";
import { freePort, repoRoot, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// `npm run keys` as an operator runs it, against a real nats-server: what it prints, what it
// stores, and that the keys it makes are the ones ingress accepts.

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: TenantStore;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function keys(args: string[], natsUrl = nats.url): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(repoRoot(), "tools", "keys", "cli.ts"), ...args],
      // No `npm start` cluster's NATS user: this nats-server is the test's own.
      {
        cwd: repoRoot(),
        env: { ...process.env, NATS_URL: natsUrl, SHOAL_CLUSTER_DIR: "/nonexistent" },
      },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : Number(err.code ?? 1), stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await TenantStore.open(nc, createLogger({ service: "test", level: "warn" }));
});

afterAll(async () => {
  store.stop();
  await nc.close();
  await nats.stop();
});

describe("npm run keys", { timeout: 60_000 }, () => {
  it("creates a tenant with grants, then a key it shows once and stores only hashed", async () => {
    const tenant = await keys(["tenant", "acme", "--models", "org/a,org/b", "--admin", "usage"]);
    expect(tenant.code, tenant.stderr).toBe(0);
    expect(tenant.stdout).toMatch(/^created acme {2}models=org\/a,org\/b {2}admin=usage/);

    const created = await keys(["create", "--tenant", "acme", "--label", "ci", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const made = JSON.parse(created.stdout) as { key: string; prefix: string; digest: string };
    expect(made.key).toMatch(/^shoal_[a-z2-7]{8}_[A-Za-z0-9_-]{43}$/);

    await expect.poll(() => store.key(made.prefix)).toBeDefined();
    expect(JSON.stringify(store.key(made.prefix))).not.toContain(made.key.slice(-43));
    expect(authenticate(store, made.key)).toMatchObject({
      tenant: "acme",
      grants: { models: ["org/a", "org/b"], admin: ["usage"] },
    });

    const listed = await keys(["list", "--tenant", "acme"]);
    expect(listed.stdout).toContain(made.prefix);
    expect(listed.stdout).toContain('"ci"');
    expect(listed.stdout).not.toContain(made.key);
  });

  it("changes a tenant's grants, keeping what is not named", async () => {
    const changed = await keys(["tenant", "acme", "--models", "*"]);
    expect(changed.stdout).toMatch(/^updated acme {2}models=\* {2}admin=usage/);
    const all = await keys(["tenants", "--json"]);
    expect(JSON.parse(all.stdout)).toEqual([
      expect.objectContaining({ name: "acme", grants: { models: ["*"], admin: ["usage"] } }),
    ]);
  });

  it("revokes and rotates: the old key stops, the new one works", async () => {
    const first = JSON.parse((await keys(["create", "--tenant", "acme", "--json"])).stdout) as {
      key: string;
      prefix: string;
    };
    const rotated = await keys(["rotate", first.prefix, "--json"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const second = JSON.parse(rotated.stdout) as { key: string; prefix: string; label: string };
    await expect
      .poll(() => {
        try {
          authenticate(store, first.key);
          return "works";
        } catch (err) {
          return (err as UnauthenticatedError).reason;
        }
      })
      .toBe("revoked");
    await expect.poll(() => authenticate(store, second.key).tenant).toBe("acme");

    const revoked = await keys(["revoke", second.prefix]);
    expect(revoked.stdout).toMatch(new RegExp(`^revoked ${second.prefix} {2}acme`));
    await expect.poll(() => store.key(second.prefix)?.revokedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("exits 2 with the usage for bad arguments, 1 for what the store refuses", async () => {
    for (const args of [
      [],
      ["nope"],
      ["create"],
      ["tenant", "x", "--admin", "root"],
      ["a", "b", "c"],
    ]) {
      const run = await keys(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("usage: npm run keys");
    }
    const unknownTenant = await keys(["create", "--tenant", "nobody"]);
    expect(unknownTenant.code).toBe(1);
    expect(unknownTenant.stderr).toContain("no tenant nobody");
    const badName = await keys(["tenant", "Not_A_Name"]);
    expect(badName.code).toBe(1);
    expect(badName.stderr).toMatch(/lower-case letters/);
    const unknownKey = await keys(["revoke", "aaaaaaaa"]);
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).toContain("no key aaaaaaaa");
  });

  it("says so, exit 1, when no NATS server answers", async () => {
    const run = await keys(["tenants"], `nats://127.0.0.1:${await freePort()}`);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^npm run keys: /);
  });
});
