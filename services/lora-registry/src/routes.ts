import {
  AdapterConflictError,
  AdapterNotFoundError,
  AdapterOwnershipError,
  checkAdapterName,
  InvalidSharingError,
  formatAdapterReference,
  InvalidBaseModelError,
  InvalidModelReferenceError,
  readAdapterArchive,
  validateLoraAdapter,
  type AdapterRecord,
  type AdapterStore,
  type AdapterVersion,
  type BaseShape,
} from "@shoal/adapters";
import type { Catalog, ModelEntry } from "@shoal/config";
import { isModelSourceError } from "@shoal/model-sources";
import { allowsModel } from "@shoal/tenants";
import type { Logger } from "@shoal/telemetry";
import type { BaseShapes } from "./base-shapes.js";
import type { RegistryMetrics } from "./registry-metrics.js";
import { BadRequestError, ForbiddenError, NotFoundError, UnavailableError } from "./errors.js";
import { jsonBody } from "./json-body.js";
import type { CompiledRegistryOptions } from "./options.js";
import { sendJson } from "./respond.js";
import type { RouteContext, Router } from "./router.js";
import type { RegistryAuth } from "./registry-auth.js";
import type { UploadSlots } from "./upload-slots.js";
import { checkUploadHeaders, uploadBody } from "./upload-body.js";

/** A sharing list is a few tenant names. */
const MAX_SHARING_BODY_BYTES = 64 * 1024;

/** What the routes work with. */
export interface RegistryDeps {
  readonly catalog: Catalog;
  readonly store: AdapterStore;
  readonly auth: RegistryAuth;
  readonly shapes: BaseShapes;
  readonly uploads: UploadSlots;
  readonly options: CompiledRegistryOptions;
  /** Whether the registry can serve: NATS connected and not shutting down. */
  readonly healthy: () => boolean;
  /** Bound to the request (`request_id`); tenants are added as they are known. */
  readonly logger: (context: RouteContext) => Logger;
  readonly metrics?: RegistryMetrics | undefined;
}

/**
 * The registry's REST API:
 *
 *   PUT    /v1/adapters/{base}/{name}                   upload a new version (tar or tar.gz)
 *   GET    /v1/adapters[?base={base}]                   the caller's adapters
 *   GET    /v1/adapters/{base}/{name}                   one adapter and its versions
 *   GET    /v1/adapters/{base}/{name}/versions/{v}      one version
 *   DELETE /v1/adapters/{base}/{name}                   the adapter and every version
 *   DELETE /v1/adapters/{base}/{name}/versions/{v}      one version
 *   PUT    /v1/adapters/{base}/{name}/sharing           who else may run it
 *   GET    /healthz                                     200 while serving, else 503
 *
 * `{base}` is a catalog model's key or its URL-encoded id. Handlers throw; the caller answers
 * errors through the error table.
 */
export function routes(router: Router, deps: RegistryDeps): Router {
  const adapter = "/v1/adapters/{base}/{name}";
  const version = `${adapter}/versions/{version}`;
  return router
    .add("GET", "/healthz", ({ res }) => {
      const healthy = deps.healthy();
      sendJson(res, healthy ? 200 : 503, { status: healthy ? "serving" : "unavailable" });
      return Promise.resolve();
    })
    .add("PUT", adapter, (context) => publish(deps, context))
    .add("GET", "/v1/adapters", async ({ req, res, url }) => {
      const { tenant } = deps.auth.authenticate(req.headers.authorization, url.pathname);
      const baseParam = url.searchParams.get("base");
      const base = baseParam === null ? undefined : generatorBase(deps.catalog, baseParam);
      const records = await storage(() => deps.store.list(base?.key));
      sendJson(res, 200, { adapters: records.filter((r) => r.owner === tenant).map(present) });
    })
    .add("GET", adapter, async (context) => {
      const { record } = await owned(deps, context);
      const { res } = context;
      sendJson(res, 200, present(record));
    })
    .add("GET", version, async (context) => {
      const number = versionParam(context.params);
      const { record } = await owned(deps, context);
      const { res } = context;
      const found = record.versions.find((v) => v.version === number);
      if (found === undefined) {
        throw new AdapterNotFoundError(
          `adapter ${record.name} for ${record.baseKey} has no version ${number}`,
        );
      }
      sendJson(res, 200, presentVersion(record, found));
    })
    .add("DELETE", adapter, async (context) => {
      await remove(deps, context, undefined);
    })
    .add("DELETE", version, async (context) => {
      await remove(deps, context, versionParam(context.params));
    })
    .add("PUT", `${adapter}/sharing`, (context) => share(deps, context));
}

async function publish(deps: RegistryDeps, context: RouteContext): Promise<void> {
  const { req, res, params } = context;
  const { options, store } = deps;
  // Everything the headers can decide is decided before a byte of the body is read.
  const caller = deps.auth.authenticate(req.headers.authorization, context.url.pathname);
  const owner = caller.tenant;
  const base = generatorBase(deps.catalog, params["base"] ?? "");
  if (!allowsModel(caller.grants, base.id)) {
    throw new ForbiddenError(`tenant ${owner} has no grant for model ${base.id}`);
  }
  const name = checkAdapterName(params["name"] ?? "");
  checkUploadHeaders(req, options.maxUploadBytes);
  const existing = await storage(() => store.get(base.key, name));
  if (existing !== undefined && existing.owner !== owner && existing.versions.length > 0) {
    throw nameTaken(base, name);
  }
  const release = deps.uploads.acquire();
  const logger = deps.logger(context).child({ tenant: owner, base: base.id, adapter: name });
  try {
    // Fetching the base (on its first upload) runs while the body arrives.
    const shape = baseShape(deps, base, logger);
    shape.catch(() => undefined);
    if (req.headers.expect?.toLowerCase() === "100-continue") res.writeContinue();
    const files = await readAdapterArchive(
      uploadBody(req, { maxBytes: options.maxUploadBytes, idleTimeoutMs: options.idleTimeoutMs }),
      { maxTotalBytes: options.maxUploadBytes, maxFileBytes: options.maxUploadBytes },
    );
    const summary = validateLoraAdapter(files, await shape, { maxRank: options.maxRank });
    const published = await storage(() =>
      store.publish({ base: { id: base.id, key: base.key }, name, owner, files, summary }),
    );
    logger.info(
      { version: published.version.version, rank: summary.rank, bytes: files.weights.byteLength },
      "adapter published",
    );
    deps.metrics?.published(files.weights.byteLength + files.config.byteLength);
    sendJson(
      res,
      201,
      {
        model: published.model,
        version: presentVersion(published.record, published.version),
        adapter: present(published.record),
      },
      { location: `/v1/adapters/${base.key}/${name}/versions/${published.version.version}` },
    );
  } finally {
    release();
  }
}

async function remove(
  deps: RegistryDeps,
  context: RouteContext,
  version: number | undefined,
): Promise<void> {
  const { record, base, tenant: owner } = await owned(deps, context);
  const name = record.name;
  const removed = await storage(() =>
    deps.store.remove(base.key, name, version === undefined ? { owner } : { owner, version }),
  );
  deps
    .logger(context)
    .info(
      { tenant: owner, base: base.id, adapter: name, versions: removed.map((v) => v.version) },
      "adapter versions removed",
    );
  sendJson(context.res, 200, { base: base.id, name, removed: removed.map((v) => v.version) });
}

/**
 * `PUT …/sharing` `{"shared_with": ["globex"]}`: who besides the owner may see and run the
 * adapter through ingress; `["*"]` shares it with every tenant, `[]` makes it private again.
 */
async function share(deps: RegistryDeps, context: RouteContext): Promise<void> {
  const { record, base, tenant } = await owned(deps, context);
  const body = await jsonBody(context.req, MAX_SHARING_BODY_BYTES);
  const sharedWith = (body as { shared_with?: unknown } | null)?.shared_with;
  if (!Array.isArray(sharedWith) || !sharedWith.every((t) => typeof t === "string")) {
    throw new BadRequestError('send {"shared_with": [tenant names, or "*"]}');
  }
  const changed = await storage(() => deps.store.share(base.key, record.name, tenant, sharedWith));
  deps
    .logger(context)
    .info(
      { tenant, base: base.id, adapter: record.name, shared_with: changed.sharedWith },
      "adapter sharing set",
    );
  sendJson(context.res, 200, present(changed));
}

/**
 * The caller's adapter named by the path. Another tenant's adapter is answered exactly as one
 * that does not exist: a tenant learns nothing of adapters it does not own.
 *
 * @throws AdapterNotFoundError, UnauthenticatedError
 */
async function owned(
  deps: RegistryDeps,
  context: RouteContext,
): Promise<{ record: AdapterRecord; base: ModelEntry; tenant: string }> {
  const { req, params, url } = context;
  const { tenant } = deps.auth.authenticate(req.headers.authorization, url.pathname);
  const base = generatorBase(deps.catalog, params["base"] ?? "");
  const name = checkAdapterName(params["name"] ?? "");
  const record = await storage(() => deps.store.get(base.key, name));
  if (record === undefined || record.versions.length === 0 || record.owner !== tenant) {
    throw new AdapterNotFoundError(`no adapter ${name} for ${base.id}`);
  }
  return { record, base, tenant };
}

/**
 * The catalog model a `{base}` segment names, by key or id, which must be a generator Shoal
 * computes itself.
 *
 * @throws NotFoundError, BadRequestError
 */
function generatorBase(catalog: Catalog, base: string): ModelEntry {
  const entry = catalog.byKey(base) ?? catalog.find(base);
  if (entry === undefined)
    throw new NotFoundError(`no catalog model has the key or id ${JSON.stringify(base)}`);
  if (entry.family !== "generator") {
    throw new BadRequestError(
      `${entry.id} is a model of family ${entry.family}; adapters are for generator models`,
    );
  }
  // The sidecar's openai backend forwards text only; the remote engine holds its own adapters.
  if (entry.source.kind === "openai") {
    throw new BadRequestError(
      `${entry.id} is served by an external engine, which loads its own adapters`,
    );
  }
  return entry;
}

async function baseShape(deps: RegistryDeps, base: ModelEntry, logger: Logger): Promise<BaseShape> {
  try {
    return await deps.shapes.shapeOf(base);
  } catch (error) {
    if (isModelSourceError(error)) {
      logger.error({ err: error }, "base model could not be fetched");
      throw new UnavailableError(`base model ${base.id} is not available; retry later`, 30, {
        cause: error,
      });
    }
    if (error instanceof InvalidBaseModelError) {
      logger.error({ err: error }, "base model shape unreadable");
      throw new BadRequestError(
        `adapters cannot be validated for ${base.id}: it is not a Llama model the registry can read`,
      );
    }
    throw error;
  }
}

function versionParam(params: Readonly<Record<string, string>>): number {
  const raw = params["version"] ?? "";
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) {
    throw new BadRequestError(`version ${JSON.stringify(raw)} is not a positive integer`);
  }
  return Number(raw);
}

/** Runs a store call; anything but the store's domain errors means storage is unreachable. */
async function storage<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (
      error instanceof AdapterNotFoundError ||
      error instanceof AdapterOwnershipError ||
      error instanceof AdapterConflictError ||
      error instanceof InvalidSharingError ||
      error instanceof InvalidModelReferenceError
    ) {
      throw error;
    }
    throw new UnavailableError("adapter storage is unavailable; retry shortly", 5, {
      cause: error,
    });
  }
}

/**
 * Adapter names are one namespace per base model, so publishing a name another tenant holds
 * must be refused; the answer says only that the name is taken, never whose it is.
 */
function nameTaken(base: ModelEntry, name: string): AdapterConflictError {
  return new AdapterConflictError(
    `the adapter name ${name} for ${base.id} is taken; choose another`,
  );
}

/** A record as the API shows it: with the `model` string requests use, per version too. */
function present(record: AdapterRecord): Record<string, unknown> {
  return {
    ...record,
    model: formatAdapterReference(record.base, { name: record.name }),
    versions: record.versions.map((v) => presentVersion(record, v)),
  };
}

function presentVersion(record: AdapterRecord, version: AdapterVersion): Record<string, unknown> {
  return {
    ...version,
    model: formatAdapterReference(record.base, { name: record.name, version: version.version }),
  };
}
