import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { ConfigError } from "@shoal/config";
import { UnauthenticatedError } from "./errors.js";

/** The tenant every request acts as when no tokens are configured. */
export const DEFAULT_TENANT = "default";

const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const TOKEN = /^[\x21-\x7e]+$/;

/**
 * Who a request acts for. With tokens configured, `Authorization: Bearer <token>` must carry
 * one of them; without, the registry is single-tenant and everyone is {@link DEFAULT_TENANT}.
 *
 * Tokens are kept only as SHA-256 digests and every one is compared, in constant time, on
 * every request, so neither the comparison nor an early exit tells a guesser how close it got.
 */
export class Tenants {
  readonly #tokens: readonly { readonly digest: Buffer; readonly tenant: string }[] | undefined;

  /** @param tokens token → tenant; undefined for single-tenant mode. */
  constructor(tokens: Readonly<Record<string, string>> | undefined) {
    this.#tokens =
      tokens === undefined
        ? undefined
        : Object.entries(tokens).map(([token, tenant]) => ({ digest: digest(token), tenant }));
  }

  /** Whether tokens are configured. */
  get multiTenant(): boolean {
    return this.#tokens !== undefined;
  }

  /** How many tenants hold tokens (for the start log; never the tokens). */
  get tenantCount(): number {
    return new Set(this.#tokens?.map((t) => t.tenant)).size;
  }

  /**
   * The tenant an `Authorization` header acts for.
   *
   * @throws UnauthenticatedError when tokens are configured and it carries none of them.
   */
  authenticate(authorization: string | undefined): string {
    if (this.#tokens === undefined) return DEFAULT_TENANT;
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? "");
    if (match === null) {
      throw new UnauthenticatedError("send Authorization: Bearer <token>");
    }
    const presented = digest(match[1] as string);
    let tenant: string | undefined;
    for (const entry of this.#tokens) {
      if (timingSafeEqual(entry.digest, presented)) tenant ??= entry.tenant;
    }
    if (tenant === undefined) throw new UnauthenticatedError("the bearer token is not valid");
    return tenant;
  }
}

/**
 * Reads a tokens file: a JSON object mapping each token to its tenant. Several tokens may map
 * to one tenant (rotation).
 *
 * @throws ConfigError naming the file and what is wrong, never a token.
 */
export async function loadTenantTokens(path: string): Promise<Record<string, string>> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new ConfigError(`tokens file ${path}: cannot read JSON`, { cause });
  }
  return compileTenantTokens(json, path);
}

/** Validates a parsed tokens document. @throws ConfigError */
export function compileTenantTokens(json: unknown, where: string): Record<string, string> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConfigError(`tokens file ${where}: must be a JSON object of token → tenant`);
  }
  const entries = Object.entries(json as Record<string, unknown>);
  if (entries.length === 0) throw new ConfigError(`tokens file ${where}: lists no tokens`);
  const tokens: Record<string, string> = {};
  entries.forEach(([token, tenant], i) => {
    if (!TOKEN.test(token)) {
      throw new ConfigError(
        `tokens file ${where}: token #${i + 1} is not printable ASCII without spaces`,
      );
    }
    if (typeof tenant !== "string" || !TENANT.test(tenant)) {
      throw new ConfigError(
        `tokens file ${where}: token #${i + 1} names no valid tenant (${TENANT.source})`,
      );
    }
    tokens[token] = tenant;
  });
  return tokens;
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}
