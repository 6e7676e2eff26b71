import { InvalidArgumentError } from "@shoal/gateway";
import {
  allowsAdmin,
  audit,
  checkLimits,
  decodeGrants,
  DEFAULT_GRANTS,
  isTenantName,
  LimitsError,
  NO_LIMITS,
  RecordError,
  TenantStoreError,
  type AdminAction,
  type KeyRecord,
  type Principal,
  type TenantLimits,
  type TenantRecord,
  type TenantStore,
  type UsageMeter,
} from "@shoal/tenants";
import type { Logger } from "@shoal/telemetry";
import type { EdgeAuth } from "../edge-auth.js";
import { asRequestError, protocolError } from "../error-table.js";
import { readRequest, type HttpRequest } from "../rest/body.js";
import { sendBody, type HttpResponse } from "../rest/respond.js";

/** Admin request bodies are a few grants or a label. */
const MAX_ADMIN_BODY_BYTES = 64 * 1024;

export interface AdminContext {
  readonly auth: EdgeAuth;
  /** Undefined on an open cluster, which has no tenants to administer. */
  readonly tenants: TenantStore | undefined;
  /** The cluster's usage bucket; undefined on an open cluster. */
  readonly usage: UsageMeter | undefined;
  readonly logger: Logger;
}

/** True for the paths the admin API serves. */
export function isAdminPath(path: string): boolean {
  return path === "/admin" || path.startsWith("/admin/");
}

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  /** What the caller's grants must include; `self` for any valid key (the route scopes it). */
  readonly needs: AdminAction | "self";
  readonly action: string;
  readonly run: (a: AdminCall) => Promise<{ status: number; body: unknown }>;
}

interface AdminCall {
  readonly store: TenantStore;
  readonly usage: UsageMeter;
  readonly caller: Principal;
  readonly req: HttpRequest;
  readonly params: readonly string[];
  readonly url: URL;
}

const NAME = "([a-z0-9][a-z0-9-]{0,62})";
const PREFIX = "([a-z2-7]{8})";

/**
 * The admin API: tenants, their grants and their keys, over the same store `npm run keys`
 * writes. Every call needs an API key whose tenant holds the `tenants` admin grant, and every
 * call, allowed or denied, leaves an audit line.
 *
 *   GET    /admin/v1/tenants
 *   PUT    /admin/v1/tenants/{name}          {"models", "admin", "limits"}: create or change
 *   GET    /admin/v1/keys[?tenant=name]
 *   POST   /admin/v1/tenants/{name}/keys     {"label": "..."}: 201 with the key, shown once
 *   DELETE /admin/v1/keys/{prefix}           revoke
 *   POST   /admin/v1/keys/{prefix}/rotate    201 with the new key; the old one is revoked
 *   GET    /admin/v1/usage[?tenant=name]     tokens and requests per tenant and model; a key
 *                                            without the `usage` grant reads its own tenant's
 */
const ROUTES: readonly Route[] = [
  {
    method: "GET",
    pattern: /^\/admin\/v1\/tenants$/,
    needs: "tenants",
    action: "tenant.list",
    run: ({ store }) => Promise.resolve({ status: 200, body: { tenants: store.tenants() } }),
  },
  {
    method: "PUT",
    pattern: new RegExp(`^/admin/v1/tenants/${NAME}$`),
    needs: "tenants",
    action: "tenant.put",
    run: async ({ store, req, params }) => {
      const name = params[0] as string;
      const current = store.tenant(name);
      const body = object(await readRequest(req, MAX_ADMIN_BODY_BYTES));
      const grants = grantsFrom(body, current?.grants ?? DEFAULT_GRANTS);
      const limits = limitsFrom(body, current?.limits ?? NO_LIMITS);
      const record: TenantRecord =
        current === undefined
          ? await store.createTenant(name, grants, limits)
          : await store.updateTenant(name, { grants, limits });
      return { status: current === undefined ? 201 : 200, body: record };
    },
  },
  {
    method: "GET",
    pattern: /^\/admin\/v1\/keys$/,
    needs: "tenants",
    action: "key.list",
    run: ({ store, url }) =>
      Promise.resolve({
        status: 200,
        body: { keys: store.keys(url.searchParams.get("tenant") ?? undefined).map(listed) },
      }),
  },
  {
    method: "POST",
    pattern: new RegExp(`^/admin/v1/tenants/${NAME}/keys$`),
    needs: "tenants",
    action: "key.create",
    run: async ({ store, req, params }) => {
      const body = object(await readRequest(req, MAX_ADMIN_BODY_BYTES));
      const label = body["label"] ?? "";
      if (typeof label !== "string") throw new InvalidArgumentError("`label` must be a string");
      const made = await store.createKey(params[0] as string, label);
      return { status: 201, body: { key: made.key, ...listed(made.record) } };
    },
  },
  {
    method: "DELETE",
    pattern: new RegExp(`^/admin/v1/keys/${PREFIX}$`),
    needs: "tenants",
    action: "key.revoke",
    run: async ({ store, params }) => ({
      status: 200,
      body: listed(await store.revokeKey(params[0] as string)),
    }),
  },
  {
    method: "POST",
    pattern: new RegExp(`^/admin/v1/keys/${PREFIX}/rotate$`),
    needs: "tenants",
    action: "key.rotate",
    run: async ({ store, params }) => {
      const made = await store.rotateKey(params[0] as string);
      return { status: 201, body: { key: made.key, ...listed(made.record) } };
    },
  },
  {
    method: "GET",
    pattern: /^\/admin\/v1\/usage$/,
    needs: "self",
    action: "usage.read",
    run: async ({ usage, caller, url }) => {
      const asked = url.searchParams.get("tenant") ?? undefined;
      const all = allowsAdmin(caller.grants, "usage");
      if (!all && asked !== undefined && asked !== caller.tenant) {
        throw new AdminError(
          403,
          "permission_denied",
          "without the 'usage' grant a key reads only its own tenant's usage",
        );
      }
      const tenant = all ? asked : caller.tenant;
      if (tenant !== undefined && !isTenantName(tenant)) {
        throw new AdminError(400, "invalid", `${JSON.stringify(tenant)} is not a tenant name`);
      }
      return { status: 200, body: { usage: await usage.read(tenant) } };
    },
  },
];

/** A key as listings show it: never its digest, which would let a thief test guesses offline. */
function listed(record: KeyRecord): Omit<KeyRecord, "digest"> {
  return {
    prefix: record.prefix,
    tenant: record.tenant,
    label: record.label,
    createdAt: record.createdAt,
    ...(record.revokedAt === undefined ? {} : { revokedAt: record.revokedAt }),
  };
}

function object(raw: unknown): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new InvalidArgumentError("request body must be a JSON object");
  }
  return raw as Record<string, unknown>;
}

function limitsFrom(body: Record<string, unknown>, base: TenantLimits): TenantLimits {
  try {
    return body["limits"] === undefined ? base : checkLimits(body["limits"]);
  } catch (err) {
    if (err instanceof LimitsError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

function grantsFrom(body: Record<string, unknown>, base: TenantRecord["grants"]) {
  try {
    return decodeGrants({
      models: body["models"] ?? base.models,
      admin: body["admin"] ?? base.admin,
    });
  } catch (err) {
    if (err instanceof RecordError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

/** An admin refusal with its HTTP status; the message is safe to show the caller. */
class AdminError extends Error {
  override readonly name = "AdminError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The status and body of any failure: the store's refusals, bad bodies, denied keys. */
function adminFailure(err: unknown): AdminError {
  if (err instanceof AdminError) return err;
  if (err instanceof TenantStoreError) {
    const status = { not_found: 404, exists: 409, conflict: 409, invalid: 400 }[err.code];
    return new AdminError(status, err.code, err.message);
  }
  const error = asRequestError(err);
  return new AdminError(protocolError(error).http, error.kind, error.message);
}

/** Answers one admin request; every failure becomes an error body, never a crash. */
export async function handleAdmin(
  req: HttpRequest,
  res: HttpResponse,
  ac: AdminContext,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://admin");
  const path = url.pathname;
  let caller: Principal | undefined;
  let route: Route | undefined;
  try {
    const store = ac.tenants;
    const usage = ac.usage;
    if (store === undefined || usage === undefined) {
      throw new AdminError(
        404,
        "not_found",
        "the admin API manages API keys: start ingress with SHOAL_AUTH=keys",
      );
    }
    const matching = ROUTES.filter((r) => r.pattern.test(path));
    if (matching.length === 0) throw new AdminError(404, "not_found", `no admin route ${path}`);
    route = matching.find((r) => r.method === req.method);
    if (route === undefined) {
      res.setHeader("allow", matching.map((r) => r.method).join(", "));
      throw new AdminError(
        405,
        "method_not_allowed",
        `${req.method ?? ""} is not allowed on ${path}`,
      );
    }
    caller = ac.auth.principal(req.headers.authorization, path);
    if (
      caller === undefined ||
      (route.needs !== "self" && !allowsAdmin(caller.grants, route.needs))
    ) {
      throw new AdminError(
        403,
        "permission_denied",
        `this key's tenant has no '${route.needs}' admin grant`,
      );
    }
    const params = (route.pattern.exec(path) ?? []).slice(1);
    const answer = await route.run({ store, usage, caller, req, params, url });
    audit(ac.logger, {
      action: route.action,
      outcome: "done",
      tenant: caller.tenant,
      keyPrefix: caller.keyPrefix,
      target: path,
    });
    sendBody(res, answer.status, answer.body);
  } catch (err) {
    const failure = adminFailure(err);
    if (failure.status >= 500) ac.logger.error({ err, path }, "admin request failed");
    if (caller !== undefined && route !== undefined) {
      audit(ac.logger, {
        action: route.action,
        outcome: "denied",
        tenant: caller.tenant,
        keyPrefix: caller.keyPrefix,
        target: path,
        reason: failure.message,
      });
    }
    const headers: Record<string, string> =
      failure.status === 401 ? { "www-authenticate": 'Bearer realm="shoal"' } : {};
    sendBody(
      res,
      failure.status,
      { error: { message: failure.message, type: "admin_error", param: null, code: failure.code } },
      headers,
    );
  }
}
