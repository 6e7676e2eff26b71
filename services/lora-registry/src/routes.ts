import {
  AdapterConflictError,
  AdapterNotFoundError,
  AdapterOwnershipError,
  checkAdapterName,
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
import type { Logger } from "@shoal/telemetry";
import type { BaseShapes } from "./base-shapes.js";
import type { RegistryMetrics } from "./registry-metrics.js";
import { BadRequestError, NotFoundError, UnavailableError } from "./errors.js";
import type { CompiledRegistryOptions } from "./options.js";
import { sendJson } from "./respond.js";
import type { RouteContext, Router } from "./router.js";
import type { Tenants } from "./tenants.js";
import type { UploadSlots } from "./upload-slots.js";
import { checkUploadHeaders, uploadBody } from "./upload-body.js";

/** What the routes work with. */
export interface RegistryDeps {
  readonly catalog: Catalog;
  readonly store: AdapterStore;
  readonly tenants: Tenants;
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
      const tenant = deps.tenants.authenticate(req.headers.authorization);
      const baseParam = url.searchParams.get("base");
      const base = baseParam === null ? undefined : generatorBase(deps.catalog, baseParam);
      const records = await storage(() => deps.store.list(base?.key));
      sendJson(res, 200, { adapters: records.filter((r) => r.owner === tenant).map(present) });
    })
    .add("GET", adapter, async ({ req, res, params }) => {
      const { record } = await owned(deps, req.headers.authorization, params);
      sendJson(res, 200, present(record));
    })
    .add("GET", version, async ({ req, res, params }) => {
      const number = versionParam(params);
      const { record } = await owned(deps, req.headers.authorization, params);
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
    });
}

async function publish(deps: RegistryDeps, context: RouteContext): Promise<void> {
  const { req, res, params } = context;
  const { options, store } = deps;
  // Everything the headers can decide is decided before a byte of the body is read.
  const owner = deps.tenants.authenticate(req.headers.authorization);
  const base = generatorBase(deps.catalog, params["base"] ?? "");
  const name = checkAdapterName(params["name"] ?? "");
  checkUploadHeaders(req, options.maxUploadBytes);
  const existing = await storage(() => store.get(base.key, name));
  if (existing !== undefined && existing.owner !== owner) throw ownedByOther(base, name);
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
  const { req, res, params } = context;
  const owner = deps.tenants.authenticate(req.headers.authorization);
  const base = generatorBase(deps.catalog, params["base"] ?? "");
  const name = checkAdapterName(params["name"] ?? "");
  const removed = await storage(() =>
    deps.store.remove(base.key, name, version === undefined ? { owner } : { owner, version }),
  );
  deps
    .logger(context)
    .info(
      { tenant: owner, base: base.id, adapter: name, versions: removed.map((v) => v.version) },
      "adapter versions removed",
    );
  sendJson(res, 200, { base: base.id, name, removed: removed.map((v) => v.version) });
}

/** The caller's adapter named by the path. @throws NotFound, Ownership, Unauthenticated */
async function owned(
  deps: RegistryDeps,
  authorization: string | undefined,
  params: Readonly<Record<string, string>>,
): Promise<{ record: AdapterRecord }> {
  const tenant = deps.tenants.authenticate(authorization);
  const base = generatorBase(deps.catalog, params["base"] ?? "");
  const name = checkAdapterName(params["name"] ?? "");
  const record = await storage(() => deps.store.get(base.key, name));
  if (record === undefined) throw new AdapterNotFoundError(`no adapter ${name} for ${base.id}`);
  if (record.owner !== tenant) throw ownedByOther(base, name);
  return { record };
}

/**
 * The catalog model a `{base}` segment names, by key or id, which must be a generator.
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
      error instanceof InvalidModelReferenceError
    ) {
      throw error;
    }
    throw new UnavailableError("adapter storage is unavailable; retry shortly", 5, {
      cause: error,
    });
  }
}

function ownedByOther(base: ModelEntry, name: string): AdapterOwnershipError {
  return new AdapterOwnershipError(`adapter ${name} for ${base.id} belongs to another tenant`);
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
