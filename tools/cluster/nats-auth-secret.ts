import { randomBytes } from "node:crypto";
import { authorizationBlock, NATS_USERS, type NatsUser } from "./nats-users.js";

/**
 * A Kubernetes Secret, as YAML, with what the Helm chart's `nats.auth.existingSecret` names:
 * `auth.conf` (the servers' `authorization` block) and one key per NATS user holding its new
 * random password. Strings are written as JSON, which YAML reads as they are.
 */
export function natsAuthSecret(name: string, namespace?: string): string {
  if (!/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(name)) {
    throw new Error(
      `"${name}" is not a Kubernetes object name (lower-case letters, digits, "-", ".")`,
    );
  }
  const passwords = Object.fromEntries(
    NATS_USERS.map((user) => [user, randomBytes(24).toString("base64url")]),
  ) as Record<NatsUser, string>;
  const data = [
    `  auth.conf: ${JSON.stringify(authorizationBlock(passwords))}`,
    ...NATS_USERS.map((user) => `  ${user}: ${JSON.stringify(passwords[user])}`),
  ];
  return [
    "apiVersion: v1",
    "kind: Secret",
    "metadata:",
    `  name: ${name}`,
    ...(namespace === undefined ? [] : [`  namespace: ${namespace}`]),
    "type: Opaque",
    "stringData:",
    ...data,
    "",
  ].join("\n");
}
