import { ADMIN_ACTIONS, type AdminAction, type Grants } from "./grants.js";
import { checkLimits, LimitsError, type TenantLimits } from "./limits.js";

/** The JetStream KV bucket every tenant and key lives in. */
export const TENANTS_BUCKET = "SHOAL_TENANTS";

/** A tenant: a team or customer whose keys share grants and, later, quotas and usage. */
export interface TenantRecord {
  readonly name: string;
  readonly grants: Grants;
  /** What its keys may take, per ingress process; absent fields are unlimited. */
  readonly limits?: TenantLimits;
  /** ISO 8601. */
  readonly createdAt: string;
}

/** An API key as the store keeps it: never the key itself, only its digest. */
export interface KeyRecord {
  readonly prefix: string;
  readonly tenant: string;
  /** SHA-256 of the full key, hex. */
  readonly digest: string;
  /** What the key is for, as its creator said ("ci", "alice's laptop"). */
  readonly label: string;
  readonly createdAt: string;
  /** Set when revoked: the key stops working everywhere within seconds. */
  readonly revokedAt?: string;
}

/** Tenant names: also KV key segments, label values in metrics and log fields. */
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const PREFIX = /^[a-z2-7]{8}$/;
const DIGEST = /^[0-9a-f]{64}$/;

/** A record that is not what the bucket should hold (written by hand, or by a newer Shoal). */
export class RecordError extends Error {
  override readonly name = "RecordError";
}

/** Whether `name` may name a tenant: lower-case letters, digits and dashes, up to 63. */
export function isTenantName(name: string): boolean {
  return NAME.test(name);
}

export function tenantKey(name: string): string {
  return `tenant.${name}`;
}

export function apiKeyKey(prefix: string): string {
  return `key.${prefix}`;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeRecord(record: TenantRecord | KeyRecord): Uint8Array {
  return encoder.encode(JSON.stringify(record));
}

function parse(bytes: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    throw new RecordError(`not a JSON record: ${(err as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new RecordError("not a JSON object");
  }
  return value as Record<string, unknown>;
}

function text(r: Record<string, unknown>, field: string, shape?: RegExp): string {
  const value = r[field];
  if (typeof value !== "string" || (shape !== undefined && !shape.test(value))) {
    throw new RecordError(`${field} is missing or malformed`);
  }
  return value;
}

export function decodeGrants(value: unknown): Grants {
  const g = value as { models?: unknown; admin?: unknown } | null;
  const models = g?.models;
  const admin = g?.admin;
  if (!Array.isArray(models) || !models.every((m) => typeof m === "string" && m !== "")) {
    throw new RecordError("grants.models must be a list of model ids or *");
  }
  if (
    !Array.isArray(admin) ||
    !admin.every((a) => (ADMIN_ACTIONS as readonly unknown[]).includes(a))
  ) {
    throw new RecordError(`grants.admin must list actions among ${ADMIN_ACTIONS.join(", ")}`);
  }
  return { models: models as string[], admin: admin as AdminAction[] };
}

export function decodeTenant(bytes: Uint8Array): TenantRecord {
  const r = parse(bytes);
  let limits;
  try {
    limits = checkLimits(r["limits"]);
  } catch (err) {
    if (err instanceof LimitsError) throw new RecordError(err.message);
    throw err;
  }
  return {
    name: text(r, "name", NAME),
    grants: decodeGrants(r["grants"]),
    ...(Object.keys(limits).length === 0 ? {} : { limits }),
    createdAt: text(r, "createdAt"),
  };
}

export function decodeKey(bytes: Uint8Array): KeyRecord {
  const r = parse(bytes);
  const revokedAt = r["revokedAt"];
  if (revokedAt !== undefined && typeof revokedAt !== "string") {
    throw new RecordError("revokedAt is malformed");
  }
  return {
    prefix: text(r, "prefix", PREFIX),
    tenant: text(r, "tenant", NAME),
    digest: text(r, "digest", DIGEST),
    label: text(r, "label"),
    createdAt: text(r, "createdAt"),
    ...(revokedAt === undefined ? {} : { revokedAt }),
  };
}
