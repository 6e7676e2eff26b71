/**
 * `nats-auth.ts config DIR`: writes DIR/auth.conf (the nats-server `authorization` block, one
 * user per kind of Shoal process) and DIR/passwords/<user>, each a new random password, all
 * readable by this user only. `npm start` runs it before nats-server, on every start.
 *
 * `nats-auth.ts bootstrap`: as the `bootstrap` user (NATS_USER, NATS_PASSWORD_FILE), makes
 * every stream and bucket before the services start.
 */
import { connectNats, drainOrClose, natsAuthFromEnv } from "@shoal/jetstream";
import { createLogger } from "@shoal/telemetry";
import { bootstrapNats } from "./nats-bootstrap.js";
import { writeNatsAuth } from "./nats-users.js";

const usage = "usage: nats-auth.ts config DIR | bootstrap";

async function bootstrap(): Promise<void> {
  const env = process.env;
  const number = (name: string): number | undefined =>
    env[name] === undefined || env[name] === "" ? undefined : Number(env[name]);
  const logger = createLogger({ service: "nats-bootstrap", level: "warn" });
  const nc = await connectNats(
    env["NATS_URL"] || "nats://127.0.0.1:4222",
    "shoal-nats-bootstrap",
    natsAuthFromEnv(env),
  );
  try {
    const streams = await bootstrapNats(nc, logger, {
      blobStoreMaxBytes: number("SHOAL_BLOB_STORE_MAX_BYTES"),
      blobTtlMs: number("SHOAL_BLOB_TTL_MS"),
      adapterStoreMaxBytes: number("SHOAL_REGISTRY_STORE_MAX_BYTES"),
    });
    console.log(`[cluster] NATS streams and buckets ready: ${streams.join(", ")}`);
  } finally {
    await drainOrClose(nc);
  }
}

const [command, dir] = process.argv.slice(2);
if (command === "config" && dir !== undefined) await writeNatsAuth(dir);
else if (command === "bootstrap") await bootstrap();
else {
  console.error(usage);
  process.exitCode = 2;
}
