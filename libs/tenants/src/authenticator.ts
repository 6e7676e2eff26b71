import { matchesDigest, parseApiKey } from "./api-key.js";
import type { Grants } from "./grants.js";
import { NO_LIMITS, type TenantLimits } from "./limits.js";
import type { KeyRecord, TenantRecord } from "./records.js";

/** Who a request acts for, once its key checked out. */
export interface Principal {
  readonly tenant: string;
  /** The key's public prefix, for logs and audit lines (never the key). */
  readonly keyPrefix: string;
  readonly grants: Grants;
  readonly limits: TenantLimits;
}

/** Why a request could not be authenticated; answered 401 (UNAUTHENTICATED). */
export class UnauthenticatedError extends Error {
  override readonly name = "UnauthenticatedError";
  constructor(
    message: string,
    /** Why, for the audit line only: the client sees `message`, the same for every key. */
    readonly reason: string,
    /** The presented key's prefix, when it had a key's shape: for the audit line. */
    readonly keyPrefix?: string,
  ) {
    super(message);
  }
}

const NOT_VALID = "the API key is not valid";

/** What the authenticator reads: the live copy of the tenant store. */
export interface TenantDirectory {
  key(prefix: string): KeyRecord | undefined;
  tenant(name: string): TenantRecord | undefined;
}

/**
 * Checks a presented API key. Every failure reads the same to the client ("not valid") so a
 * guesser learns nothing about which part was wrong; the reason is in the error for the log.
 * The digest comparison is constant-time, and a key of the wrong shape is rejected before any
 * lookup.
 */
export function authenticate(directory: TenantDirectory, presented: string): Principal {
  const parsed = parseApiKey(presented);
  if (parsed === undefined) throw new UnauthenticatedError(NOT_VALID, "not a Shoal key");
  const record = directory.key(parsed.prefix);
  if (record === undefined) {
    throw new UnauthenticatedError(NOT_VALID, "unknown key", parsed.prefix);
  }
  if (!matchesDigest(presented, record.digest)) {
    throw new UnauthenticatedError(NOT_VALID, "wrong secret for the prefix", parsed.prefix);
  }
  if (record.revokedAt !== undefined) {
    throw new UnauthenticatedError(NOT_VALID, "revoked", parsed.prefix);
  }
  const tenant = directory.tenant(record.tenant);
  if (tenant === undefined) {
    throw new UnauthenticatedError(NOT_VALID, "tenant deleted", parsed.prefix);
  }
  return {
    tenant: tenant.name,
    keyPrefix: record.prefix,
    grants: tenant.grants,
    limits: tenant.limits ?? NO_LIMITS,
  };
}

/**
 * The key in an `Authorization` header (`Bearer <key>`, what the OpenAI SDKs send), or in a
 * gRPC/Connect `authorization` metadata entry of the same form.
 *
 * @throws UnauthenticatedError when the header is missing or not a bearer credential.
 */
export function bearerKey(authorization: string | undefined): string {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? "");
  if (match?.[1] === undefined) {
    throw new UnauthenticatedError(
      "send an API key as Authorization: Bearer <key>",
      authorization === undefined ? "no key" : "not a bearer credential",
    );
  }
  return match[1];
}
