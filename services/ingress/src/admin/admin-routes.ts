import { InvalidArgumentError } from "@shoal/gateway";
import {
  allowsAdmin,
  audit,
  decodeGrants,
  DEFAULT_GRANTS,
  RecordError,
  TenantStoreError,
  type AdminAction,
  type KeyRecord,
  type Principal,
  type TenantRecord,
  type TenantStore,
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
  readonly logger: Logger;
}

/** True for the paths the admin API serves. */
export function isAdminPath(path: string): boolean {
  return path === "/admin" || path.startsWith("/admin/");
}

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  /** What the caller's grants must include. */
  readonly needs: AdminAction;
  readonly action: string;
  readonly run: (a: AdminCall) => Promise<{ status: number; body: unknown }>;
}

interface AdminCall {
  readonly store: TenantStore;
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
 *   PUT    /admin/v1/tenants/{name}          {"models": [...], "admin": [...]}: create or regrant
 *   GET    /admin/v1/keys[?tenant=name]
 *   POST   /admin/v1/tenants/{name}/keys     {"label": "..."}: 201 with the key, shown once
 *   DELETE /admin/v1/keys/{prefix}           revoke
 *   POST   /admin/v1/keys/{prefix}/rotate    201 with the new key; the old one is revoked
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
      const record: TenantRecord =
        current === undefined
          ? await store.createTenant(name, grants)
          : await store.setGrants(name, grants);
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
    if (store === undefined) {
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
    if (caller === undefined || !allowsAdmin(caller.grants, route.needs)) {
      throw new AdminError(
        403,
        "permission_denied",
        `this key's tenant has no '${route.needs}' admin grant`,
      );
    }
    const params = (route.pattern.exec(path) ?? []).slice(1);
    const answer = await route.run({ store, req, params, url });
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
