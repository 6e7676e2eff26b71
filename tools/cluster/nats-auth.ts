/**
 * `nats-auth.ts config DIR`: writes DIR/auth.conf (the nats-server `authorization` block, one
 * user per kind of Shoal process) and DIR/passwords/<user>, each a new random password, all
 * readable by this user only. `npm start` runs it before nats-server, on every start.
 *
 * `nats-auth.ts bootstrap`: as the `bootstrap` user (NATS_USER, NATS_PASSWORD_FILE), makes
 * every stream and bucket (SHOAL_STREAM_REPLICAS copies) and each catalog model's consumer
 * before the services start.
 *
 * `nats-auth.ts secret NAME [NAMESPACE]` (`npm run nats-auth -- secret NAME`): prints a
 * Kubernetes Secret with new users and passwords, for the Helm chart's
 * `nats.auth.existingSecret`.
 */
import { connectNats, drainOrClose, natsAuthFromEnv } from "@shoal/jetstream";
import { ConfigError } from "@shoal/config";
import { catalogFromEnv, envInt } from "@shoal/process";
import { createLogger } from "@shoal/telemetry";
import { bootstrapNats } from "./nats-bootstrap.js";
import { natsAuthSecret } from "./nats-auth-secret.js";
import { writeNatsAuth } from "./nats-users.js";

const usage = "usage: nats-auth.ts config DIR | bootstrap | secret NAME [NAMESPACE]";

async function bootstrap(): Promise<void> {
  const env = process.env;
  const replicas = envInt(env, "SHOAL_STREAM_REPLICAS");
  // JetStream keeps at most five copies; an even count gains nothing over the odd one below.
  if (replicas !== undefined && ![1, 3, 5].includes(replicas)) {
    throw new ConfigError(`SHOAL_STREAM_REPLICAS must be 1, 3 or 5, got ${replicas}`);
  }
  const logger = createLogger({ service: "nats-bootstrap", level: "warn" });
  const nc = await connectNats(
    env["NATS_URL"] || "nats://127.0.0.1:4222",
    "shoal-nats-bootstrap",
    natsAuthFromEnv(env),
  );
  try {
    const streams = await bootstrapNats(nc, logger, {
      blobStoreMaxBytes: envInt(env, "SHOAL_BLOB_STORE_MAX_BYTES"),
      blobTtlMs: envInt(env, "SHOAL_BLOB_TTL_MS"),
      adapterStoreMaxBytes: envInt(env, "SHOAL_REGISTRY_STORE_MAX_BYTES"),
      replicas,
      modelKeys: (await catalogFromEnv(env)).models.map((m) => m.key),
      ackWaitMs: envInt(env, "SHOAL_ACK_WAIT_MS"),
    });
    console.log(`[cluster] NATS streams and buckets ready: ${streams.join(", ")}`);
  } finally {
    await drainOrClose(nc);
  }
}

const [command, dir, namespace] = process.argv.slice(2);
if (command === "config" && dir !== undefined) await writeNatsAuth(dir);
else if (command === "secret" && dir !== undefined)
  process.stdout.write(natsAuthSecret(dir, namespace));
else if (command === "bootstrap") await bootstrap();
else {
  console.error(usage);
  process.exitCode = 2;
}
