import { readFileSync } from "node:fs";
import {
  connect,
  createInbox,
  type ConnectionOptions,
  type NatsConnection,
} from "@nats-io/transport-node";
import { reportNatsReadiness, type ReadinessSink } from "./readiness.js";

/**
 * How a process proves itself to NATS and checks NATS in return: the server's CA (the
 * connection then requires TLS and verifies the server's certificate), a client certificate
 * for servers that verify clients, and the service's own user. Without any, the connection is
 * cleartext and anonymous, as on a loopback quickstart.
 */
export interface NatsAuth {
  /** PEM file of the CA that signed the server's certificate. */
  readonly caFile?: string | undefined;
  /** PEM client certificate and key, both or neither. */
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
  /** The NATS user this process connects as: one per service kind, with only its permissions. */
  readonly user?: string | undefined;
  readonly password?: string | undefined;
}

/**
 * {@link NatsAuth} from the environment every service shares: `NATS_CA`, `NATS_CERT`,
 * `NATS_KEY`, `NATS_USER` and `NATS_PASSWORD` (or `NATS_PASSWORD_FILE`, which keeps the
 * password out of the process's environment listing).
 */
export function natsAuthFromEnv(env: NodeJS.ProcessEnv): NatsAuth {
  const value = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v === "" ? undefined : v;
  };
  const passwordFile = value("NATS_PASSWORD_FILE");
  return {
    caFile: value("NATS_CA"),
    certFile: value("NATS_CERT"),
    keyFile: value("NATS_KEY"),
    user: value("NATS_USER"),
    password:
      passwordFile === undefined
        ? value("NATS_PASSWORD")
        : readFileSync(passwordFile, "utf8").trim(),
  };
}

/** Where the replies to a process connected as NATS user `user` arrive: `_INBOX_<user>.…`. */
export function userInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

/**
 * A new inbox subject under the connection's inbox prefix. The client's own request and
 * JetStream code read the prefix from the connection's options, which its public type does not
 * show; Shoal's pulls and publish acks must use the same prefix its NATS user may subscribe to.
 */
export function connectionInbox(nc: NatsConnection): string {
  const options = (nc as { options?: { inboxPrefix?: string } }).options;
  return createInbox(options?.inboxPrefix);
}

/** The connection options `auth` adds. */
function authOptions(auth: NatsAuth): Partial<ConnectionOptions> {
  const tls =
    auth.caFile === undefined && auth.certFile === undefined
      ? undefined
      : {
          ...(auth.caFile === undefined ? {} : { caFile: auth.caFile }),
          ...(auth.certFile === undefined ? {} : { certFile: auth.certFile }),
          ...(auth.keyFile === undefined ? {} : { keyFile: auth.keyFile }),
        };
  return {
    ...(tls === undefined ? {} : { tls }),
    // Replies to a user come under an inbox prefix of its own, so no service's user needs
    // (or gets) the right to subscribe to every other service's replies.
    ...(auth.user === undefined
      ? {}
      : { user: auth.user, pass: auth.password ?? "", inboxPrefix: userInboxPrefix(auth.user) }),
  };
}

/**
 * Connects a Shoal process to NATS: `servers` is one URL, a comma-separated list (the seeds of
 * a NATS cluster; the client learns the other members from them) or an array. It reconnects
 * forever: a NATS restart must not take a worker or ingress down with it, and JetStream holds
 * the work meanwhile.
 *
 * A service passes its `readiness`: it then also waits for a first server instead of failing,
 * reported not ready meanwhile and whenever it is disconnected, so a pod started before NATS
 * (or cut off from it) waits, visibly, rather than crash-looping. Commands fail at once.
 */
export async function connectNats(
  servers: string | readonly string[],
  name: string,
  auth: NatsAuth = {},
  readiness?: ReadinessSink,
): Promise<NatsConnection> {
  const list = (typeof servers === "string" ? servers.split(",") : [...servers])
    .map((s) => s.trim())
    .filter((s) => s !== "");
  readiness?.set("nats", `connecting to ${list.join(", ")}`);
  const nc = await connect({
    servers: list,
    name,
    maxReconnectAttempts: -1,
    ...(readiness === undefined ? {} : { waitOnFirstConnect: true }),
    ...authOptions(auth),
  });
  if (readiness !== undefined) void reportNatsReadiness(nc, readiness);
  return nc;
}

/**
 * Drains a connection (flushes what it publishes, lets subscriptions finish) on shutdown, and
 * closes it outright when draining cannot work because the server is already gone.
 */
export async function drainOrClose(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) return;
  try {
    await nc.drain();
  } catch {
    await nc.close();
  }
}
