/**
 * `npm run keys`: tenants and their API keys, straight in the cluster's `SHOAL_TENANTS` bucket
 * (the first admin key can only be made this way; after it, the admin API does the same).
 *
 *   npm run keys -- tenant acme [--models org/a,org/b | --models '*'] [--admin tenants,usage]
 *                                [--rps 50] [--tps 20000] [--concurrency 16]   (0: no limit)
 *   npm run keys -- tenants
 *   npm run keys -- create --tenant acme [--label ci]
 *   npm run keys -- list [--tenant acme]
 *   npm run keys -- revoke <prefix>
 *   npm run keys -- rotate <prefix>
 *
 * `--json` prints the result as JSON. NATS_URL names the cluster (default
 * nats://127.0.0.1:4222), NATS_CA, NATS_USER and NATS_PASSWORD how to reach it; without
 * NATS_USER it connects as `npm start`'s `keys` user when that cluster's password file exists. Exit status: 0, 1 when the store refused or could not be reached, 2
 * for bad arguments.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { connectNats, drainOrClose, natsAuthFromEnv } from "@shoal/jetstream";
import { createLogger } from "@shoal/telemetry";
import { TenantStore } from "@shoal/tenants";
import { runCommand, TenantStoreError, UsageError, type KeysArgs } from "./commands.js";

const usage =
  "usage: npm run keys -- tenant NAME [--models A,B|*] [--admin tenants,models,usage] " +
  "[--rps N] [--tps N] [--concurrency N] | tenants | " +
  "create --tenant NAME [--label TEXT] | list [--tenant NAME] | revoke PREFIX | rotate PREFIX [--json]";

function parse(argv: string[]): KeysArgs & { json: boolean } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: "string" },
      label: { type: "string" },
      models: { type: "string" },
      admin: { type: "string" },
      rps: { type: "string" },
      tps: { type: "string" },
      concurrency: { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  if (positionals.length > 2) throw new UsageError(`unexpected ${positionals.slice(2).join(" ")}`);
  return { command: positionals[0], operand: positionals[1], ...values, json: values.json };
}

/**
 * The environment with `npm start`'s `keys` NATS user filled in, when none is given and that
 * cluster's password file is here: the quickstart needs no NATS settings.
 */
function withClusterUser(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env["NATS_USER"]) return env;
  const home = env["SHOAL_HOME"] || join(homedir(), ".cache", "shoal");
  const file = join(
    env["SHOAL_CLUSTER_DIR"] || join(home, "cluster"),
    "nats-auth",
    "passwords",
    "keys",
  );
  return existsSync(file) ? { ...env, NATS_USER: "keys", NATS_PASSWORD_FILE: file } : env;
}

async function main(): Promise<number> {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  const logger = createLogger({ service: "keys", level: "warn" });
  const env = withClusterUser(process.env);
  const nc = await connectNats(
    env["NATS_URL"] || "nats://127.0.0.1:4222",
    "shoal-keys",
    natsAuthFromEnv(env),
  ).catch((err: unknown) => {
    const as = env["NATS_USER"] === undefined ? "" : ` as NATS user ${env["NATS_USER"]}`;
    const from = env["NATS_PASSWORD_FILE"] === undefined ? "" : ` (${env["NATS_PASSWORD_FILE"]})`;
    throw new Error(
      `cannot connect to ${env["NATS_URL"] || "nats://127.0.0.1:4222"}${as}${from}: ${(err as Error).message}`,
    );
  });
  const store = await TenantStore.open(nc, logger);
  try {
    const result = await runCommand(store, args);
    console.log(args.json ? JSON.stringify(result.json, null, 2) : result.lines.join("\n"));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (err instanceof TenantStoreError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  } finally {
    store.stop();
    await drainOrClose(nc);
  }
}

process.exitCode = await main().catch((err: unknown) => {
  console.error(`npm run keys: ${(err as Error).message}`);
  return 1;
});
