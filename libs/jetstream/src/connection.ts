import { readFileSync } from "node:fs";
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";

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
    ...(auth.user === undefined ? {} : { user: auth.user, pass: auth.password ?? "" }),
  };
}

/**
 * Connects a Shoal process to NATS. It reconnects forever: a NATS restart must not take a
 * worker or ingress down with it, and JetStream holds the work meanwhile.
 */
export function connectNats(
  servers: string | readonly string[],
  name: string,
  auth: NatsAuth = {},
): Promise<NatsConnection> {
  return connect({
    servers: typeof servers === "string" ? servers : [...servers],
    name,
    maxReconnectAttempts: -1,
    ...authOptions(auth),
  });
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
