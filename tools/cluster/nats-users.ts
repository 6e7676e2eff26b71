/**
 * One NATS user per kind of Shoal process, each allowed exactly the subjects and JetStream API
 * calls that process makes, and the nats-server `authorization` block that declares them.
 * docs/security.md ("NATS users") lists every permission and why; the permissions test
 * connects as each user and shows what it may not do.
 *
 * Streams and buckets are made by the `bootstrap` user alone (`nats-bootstrap.ts`); the
 * services only read their info, so none of them can create, change or delete a stream.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ADAPTER_BUCKET, ADAPTER_INDEX_BUCKET } from "@shoal/adapters";
import { BLOB_BUCKET } from "@shoal/blobs";
import { DEAD_LETTER_STREAM, userInboxPrefix, WORK_STREAM } from "@shoal/jetstream";
import { RESIDENCY_BUCKET } from "@shoal/residency";
import { TENANTS_BUCKET, USAGE_BUCKET } from "@shoal/tenants";

export const NATS_USERS = [
  "bootstrap",
  "ingress",
  "worker",
  "model-loader",
  "lora-registry",
  "blob-offloader",
  "local-queue",
  "keys",
  "console",
] as const;
export type NatsUser = (typeof NATS_USERS)[number];

export interface Permissions {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
  /**
   * May answer requests it received (one reply each): the worker answers the model-loader's
   * control requests, the blob offloader ingress's uploads.
   */
  readonly allowResponses?: boolean;
}

const API = "$JS.API";
const WORK = WORK_STREAM;

/** Reading a KV bucket: its info, a watch (an ordered consumer), its flow control. */
function watchKv(bucket: string): string[] {
  return [
    `${API}.STREAM.INFO.KV_${bucket}`,
    `${API}.CONSUMER.CREATE.KV_${bucket}.>`,
    `${API}.CONSUMER.INFO.KV_${bucket}.>`,
    `${API}.CONSUMER.DELETE.KV_${bucket}.>`,
    `$JS.FC.KV_${bucket}.>`,
  ];
}

/** Reading and writing a KV bucket's entries (get is a direct get). */
function writeKv(bucket: string): string[] {
  return [...watchKv(bucket), `${API}.DIRECT.GET.KV_${bucket}.>`, `$KV.${bucket}.>`];
}

/** Reading an object store: metadata by message get, chunks by an ordered consumer. */
function readObjects(bucket: string): string[] {
  return [
    `${API}.STREAM.INFO.OBJ_${bucket}`,
    `${API}.STREAM.MSG.GET.OBJ_${bucket}`,
    `${API}.CONSUMER.CREATE.OBJ_${bucket}.>`,
    `${API}.CONSUMER.DELETE.OBJ_${bucket}.>`,
    `$JS.FC.OBJ_${bucket}.>`,
  ];
}

/** Writing one too: chunks and metadata, and purging what a put replaced or a delete freed. */
function writeObjects(bucket: string): string[] {
  return [...readObjects(bucket), `$O.${bucket}.>`, `${API}.STREAM.PURGE.OBJ_${bucket}`];
}

/**
 * Every reply (JetStream API answers, request replies, pull deliveries, watches) comes to the
 * user's own inbox prefix (`connectNats` sets it), so no user may read another's replies.
 */
const inbox = (user: NatsUser): string => `${userInboxPrefix(user)}.>`;

export const PERMISSIONS: Readonly<Record<NatsUser, Permissions>> = {
  // Makes and changes streams and buckets, once, before the services start.
  bootstrap: { publish: [">"], subscribe: [">"] },
  ingress: {
    publish: [
      `${API}.INFO`,
      `${API}.STREAM.INFO.${WORK}`,
      // Queue depth and oldest item per model, for the backlog and the metrics.
      `${API}.CONSUMER.INFO.${WORK}.*`,
      `${API}.STREAM.MSG.GET.${WORK}`,
      // Queueing work (annotated in this process), and asking for a model to be loaded.
      "shoal.work.v1.>",
      "shoal.want.v1.*",
      // Cancelling or pacing a generation on its worker.
      "shoal.streamctl.v1.>",
      // Handing large inputs to the blob offloader.
      "shoal.blob.v1.open",
      "shoal.blob.v1.remove",
      "shoal.blob.v1.chunk.>",
      ...watchKv(RESIDENCY_BUCKET),
      ...watchKv(ADAPTER_INDEX_BUCKET),
      `${API}.STREAM.INFO.OBJ_${ADAPTER_BUCKET}`,
      // API keys (the admin API changes them) and usage.
      ...writeKv(TENANTS_BUCKET),
      ...writeKv(USAGE_BUCKET),
    ],
    subscribe: [inbox("ingress"), "shoal.reply.v1.*", "shoal.stream.v1.*"],
  },
  worker: {
    publish: [
      `${API}.INFO`,
      `${API}.STREAM.INFO.${WORK}`,
      `${API}.STREAM.INFO.${DEAD_LETTER_STREAM}`,
      // Its models' consumers, filtered to their own work subjects.
      `${API}.CONSUMER.INFO.${WORK}.*`,
      `${API}.CONSUMER.CREATE.${WORK}.*.shoal.work.v1.*.>`,
      `${API}.CONSUMER.MSG.NEXT.${WORK}.*`,
      // Acks, in-progress, naks and terms of the items it pulled.
      `$JS.ACK.${WORK}.>`,
      // A retried item goes back under its retry subject (never new work); one given up on to
      // the dead letters.
      "shoal.work.v1.*.*.retry",
      "shoal.dead.v1.*",
      // Answers, and generation events, to the ingress that holds the request.
      "shoal.reply.v1.*",
      "shoal.stream.v1.*",
      "shoal.heartbeat.v1.*",
      `${API}.STREAM.INFO.KV_${ADAPTER_INDEX_BUCKET}`,
      `${API}.DIRECT.GET.KV_${ADAPTER_INDEX_BUCKET}.>`,
      ...readObjects(ADAPTER_BUCKET),
      ...readObjects(BLOB_BUCKET),
    ],
    subscribe: [inbox("worker"), "shoal.control.v1.*", "shoal.streamctl.v1.>"],
    allowResponses: true,
  },
  "model-loader": {
    publish: [
      `${API}.INFO`,
      `${API}.STREAM.INFO.${WORK}`,
      `${API}.CONSUMER.INFO.${WORK}.*`,
      `${API}.CONSUMER.CREATE.${WORK}.*.shoal.work.v1.*.>`,
      "shoal.control.v1.*",
      ...writeKv(RESIDENCY_BUCKET),
    ],
    subscribe: [inbox("model-loader"), "shoal.heartbeat.v1.*", "shoal.want.v1.*"],
  },
  "lora-registry": {
    publish: [
      `${API}.INFO`,
      ...writeObjects(ADAPTER_BUCKET),
      ...writeKv(ADAPTER_INDEX_BUCKET),
      ...watchKv(TENANTS_BUCKET),
    ],
    subscribe: [inbox("lora-registry")],
  },
  "blob-offloader": {
    publish: [`${API}.INFO`, ...writeObjects(BLOB_BUCKET)],
    subscribe: [
      inbox("blob-offloader"),
      "shoal.blob.v1.open",
      "shoal.blob.v1.remove",
      "shoal.blob.v1.chunk.>",
    ],
    allowResponses: true,
  },
  // Extends or returns the items its workers pulled, on the ack subjects they handed over.
  "local-queue": { publish: [`$JS.ACK.${WORK}.>`], subscribe: [inbox("local-queue")] },
  keys: { publish: [`${API}.INFO`, ...writeKv(TENANTS_BUCKET)], subscribe: [inbox("keys")] },
  // Reads what the others publish, for the web console: it changes nothing and queues nothing.
  console: {
    publish: [
      `${API}.INFO`,
      `${API}.STREAM.INFO.${WORK}`,
      `${API}.STREAM.INFO.${DEAD_LETTER_STREAM}`,
      `${API}.CONSUMER.INFO.${WORK}.*`,
      `${API}.STREAM.MSG.GET.${WORK}`,
      ...watchKv(RESIDENCY_BUCKET),
      ...watchKv(ADAPTER_INDEX_BUCKET),
    ],
    subscribe: [inbox("console"), "shoal.heartbeat.v1.*"],
  },
};

/** The nats-server `authorization` block for these users and their passwords. */
export function authorizationBlock(passwords: Readonly<Record<NatsUser, string>>): string {
  const list = (subjects: readonly string[]): string =>
    `[${subjects.map((s) => JSON.stringify(s)).join(", ")}]`;
  const users = NATS_USERS.map((user) => {
    const p = PERMISSIONS[user];
    const responses = p.allowResponses === true ? ", allow_responses: true" : "";
    return (
      `    { user: ${JSON.stringify(user)}, password: ${JSON.stringify(passwords[user])}, ` +
      `permissions: { publish: { allow: ${list(p.publish)} }, ` +
      `subscribe: { allow: ${list(p.subscribe)} }${responses} } }`
    );
  });
  return `authorization {\n  users = [\n${users.join(",\n")}\n  ]\n}\n`;
}

/**
 * Writes `dir/auth.conf` (include it in nats-server's configuration, or pass it as `-c`) and
 * `dir/passwords/<user>` with a new random password per user, readable by this user only.
 *
 * @returns the passwords, by user.
 */
export async function writeNatsAuth(dir: string): Promise<Record<NatsUser, string>> {
  const passwords = Object.fromEntries(
    NATS_USERS.map((user) => [user, randomBytes(24).toString("base64url")]),
  ) as Record<NatsUser, string>;
  await mkdir(join(dir, "passwords"), { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await writeFile(join(dir, "auth.conf"), authorizationBlock(passwords), { mode: 0o600 });
  for (const user of NATS_USERS) {
    await writeFile(join(dir, "passwords", user), `${passwords[user]}\n`, { mode: 0o600 });
  }
  return passwords;
}
