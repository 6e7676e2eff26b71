import { createHash } from "node:crypto";
import { Kvm } from "@nats-io/kv";
import { Objm, StorageType, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";
import { fetchFilesInto } from "./adapter-fetch.js";
import { AdapterIndex, type IndexChange } from "./adapter-index.js";
import { adapterWatch, type AdapterWatch } from "./adapter-watch.js";
import type { AdapterFiles, AdapterSummary } from "./peft.js";
import { checkAdapterName, checkAdapterVersion, formatAdapterReference } from "./reference.js";
import { isTenantName } from "@shoal/tenants";
import {
  AdapterNotFoundError,
  AdapterOwnershipError,
  InvalidSharingError,
} from "./store-errors.js";
import {
  ADAPTER_BUCKET,
  ADAPTER_FILES,
  ADAPTER_INDEX_BUCKET,
  adapterIndexKey,
  adapterObjectName,
  checkBaseKey,
  parseAdapterIndexKey,
  type AdapterRecord,
  type AdapterVersion,
  type FileDigest,
} from "./store-records.js";

export interface AdapterStoreOptions {
  /**
   * Bound on all stored adapter files together, bytes: a full bucket refuses new versions.
   * Applied when the bucket is created; an existing bucket keeps its own. @default 10 GiB
   */
  readonly maxBytes?: number;
  /** JetStream replicas of both buckets, when they are created. @default 1 */
  readonly replicas?: number;
  /** Compare-and-set attempts on one index entry before giving up. @default 32 */
  readonly maxAttempts?: number;
  /** Where failures of best-effort cleanup are reported. @default silent */
  readonly logger?: Logger;
}

/** The base model an adapter is for, as the catalog names it. */
export interface AdapterBase {
  /** Catalog id, e.g. `HuggingFaceTB/SmolLM2-135M-Instruct`. */
  readonly id: string;
  /** Catalog key, e.g. `smollm2-135m-instruct`. */
  readonly key: string;
}

export interface PublishRequest {
  readonly base: AdapterBase;
  readonly name: string;
  /** The publishing tenant; it must own the adapter, or the adapter must be new. */
  readonly owner: string;
  readonly files: AdapterFiles;
  /** What {@link validateLoraAdapter} said about `files`. */
  readonly summary: AdapterSummary;
}

export interface PublishedAdapter {
  readonly record: AdapterRecord;
  readonly version: AdapterVersion;
  /** What a request sends to use this version: `<base id>:<name>@<version>`. */
  readonly model: string;
}

export interface RemoveOptions {
  /** Only this version; unset removes the adapter and every version. */
  readonly version?: number;
  /** When set, the adapter must belong to this tenant. */
  readonly owner?: string;
}

export interface SweepResult {
  /** Objects that belonged to no published version. */
  readonly objects: number;
  /** Names reserved by a first upload that never finished. */
  readonly reservations: number;
}

/** Leftovers younger than this may belong to an upload still in progress. @default 1 h */
const DEFAULT_SWEEP_AGE_MS = 60 * 60_000;

/**
 * Adapters in JetStream: files in the Object Store bucket `shoal-adapters` under
 * `<baseKey>/<name>/<version>/{adapter_config.json,adapter_model.safetensors}`, and an index
 * in the KV bucket `shoal-adapter-index` with one {@link AdapterRecord} per `<baseKey>.<name>`.
 *
 * Publishing is safe under concurrency without locks. A version number is first reserved by a
 * compare-and-set on the index (so two uploads never share one, and no upload overwrites
 * another's objects); the files are stored under it; a second compare-and-set adds the version
 * to the record, which is when readers see it. If storing or that last write fails, the
 * objects are deleted and the reservation released. A process killed in between leaves
 * objects no version names and an empty reservation: {@link sweep} removes both once they are
 * older than any upload takes. A name's version numbers only grow, even across deleting the
 * adapter and publishing the name again, so `name@version` always means the same files.
 *
 * Readers (ingress resolving `base:name@version`, workers fetching files) use
 * {@link resolve}, {@link fetch} and {@link watch}; versions are immutable, and a fetch checks
 * every byte against the digests in the index.
 */
export class AdapterStore {
  readonly #objects: ObjectStore;
  readonly #index: AdapterIndex;
  readonly #logger: Logger | undefined;

  private constructor(objects: ObjectStore, index: AdapterIndex, logger: Logger | undefined) {
    this.#objects = objects;
    this.#index = index;
    this.#logger = logger;
  }

  /** Opens both buckets, creating them (with `options`' bounds) when missing. */
  static async open(nc: NatsConnection, options: AdapterStoreOptions = {}): Promise<AdapterStore> {
    const replicas = options.replicas ?? 1;
    const objects = await new Objm(nc).create(ADAPTER_BUCKET, {
      storage: StorageType.File,
      max_bytes: options.maxBytes ?? 10 * 1024 ** 3,
      replicas,
    });
    const kv = await new Kvm(nc).create(ADAPTER_INDEX_BUCKET, {
      history: 1,
      storage: StorageType.File,
      replicas,
    });
    return new AdapterStore(
      objects,
      new AdapterIndex(kv, options.maxAttempts ?? 32),
      options.logger,
    );
  }

  /**
   * Stores a validated adapter as its next version.
   *
   * @throws AdapterOwnershipError when another tenant owns the adapter.
   * @throws AdapterConflictError when the index stays contended.
   * @throws whatever the object store throws (full bucket, NATS gone); nothing is left behind.
   */
  async publish(request: PublishRequest): Promise<PublishedAdapter> {
    const { base, owner } = request;
    const name = checkAdapterName(request.name);
    const key = adapterIndexKey(base.key, name);
    const checkOwner = (current: AdapterRecord): void => {
      if (current.owner !== owner) throw ownedByOther(base.key, name);
    };
    const fresh = (
      versions: readonly AdapterVersion[],
      lastVersion: number,
      createdAt: string,
    ): AdapterRecord => ({
      base: base.id,
      baseKey: base.key,
      name,
      owner,
      versions,
      lastVersion,
      createdAt,
    });

    const reserved = await this.#index.mutate(key, (current) => {
      if (current === undefined || current.deleted === true) {
        // A new name, or a deleted one: the uploader takes it, and numbering goes on.
        return { put: fresh([], (current?.lastVersion ?? 0) + 1, new Date().toISOString()) };
      }
      checkOwner(current);
      return { put: { ...current, base: base.id, lastVersion: current.lastVersion + 1 } };
    });
    const number = (reserved.change as { put: AdapterRecord }).put.lastVersion;

    const config = adapterObjectName(base.key, name, number, "config");
    const weights = adapterObjectName(base.key, name, number, "weights");
    try {
      const version: AdapterVersion = {
        version: number,
        ...request.summary,
        files: {
          config: await this.#put(config, request.files.config),
          weights: await this.#put(weights, request.files.weights),
        },
        createdAt: new Date().toISOString(),
      };
      const committed = await this.#index.mutate(key, (current) => {
        // The adapter was deleted while this upload ran: this version brings it back.
        if (current === undefined || current.deleted === true) {
          return {
            put: fresh([version], Math.max(current?.lastVersion ?? 0, number), version.createdAt),
          };
        }
        checkOwner(current);
        return {
          put: {
            ...current,
            versions: [...current.versions, version].sort((a, b) => a.version - b.version),
            lastVersion: Math.max(current.lastVersion, number),
          },
        };
      });
      const record = (committed.change as { put: AdapterRecord }).put;
      return {
        record,
        version,
        model: formatAdapterReference(base.id, { name, version: number }),
      };
    } catch (error) {
      await this.#deleteObjects([config, weights]);
      await this.#release(key, number, owner);
      throw error;
    }
  }

  /** Every adapter (of one base model, when `baseKey` is set), by base key and name. */
  async list(baseKey?: string): Promise<AdapterRecord[]> {
    const filter = baseKey === undefined ? ">" : `${checkBaseKey(baseKey)}.*`;
    const records: AdapterRecord[] = [];
    for await (const key of await this.#index.kv.keys(filter)) {
      const entry = await this.#index.read(key);
      if (entry !== undefined && entry.record.versions.length > 0) records.push(entry.record);
    }
    return records.sort(
      (a, b) => a.baseKey.localeCompare(b.baseKey) || a.name.localeCompare(b.name),
    );
  }

  /** One adapter, or undefined when it does not exist. */
  async get(baseKey: string, name: string): Promise<AdapterRecord | undefined> {
    const entry = await this.#index.read(adapterIndexKey(baseKey, name));
    return entry === undefined || entry.record.versions.length === 0 ? undefined : entry.record;
  }

  /**
   * The version a request names: `version`, or the latest when unset.
   *
   * @throws AdapterNotFoundError when the adapter or that version does not exist.
   */
  async resolve(baseKey: string, name: string, version?: number): Promise<AdapterVersion> {
    const record = await this.get(baseKey, name);
    if (record === undefined) throw notFound(baseKey, name);
    const found =
      version === undefined
        ? record.versions[record.versions.length - 1]
        : record.versions.find((v) => v.version === checkAdapterVersion(version));
    if (found === undefined) throw notFound(baseKey, name, version);
    return found;
  }

  /**
   * Removes one version, or the whole adapter. Removing the last version removes the adapter,
   * which frees its name for any tenant; its version numbers are still never given again (the
   * index keeps a `deleted` record holding `lastVersion`).
   *
   * @returns the versions removed.
   * @throws AdapterNotFoundError when there is nothing to remove.
   * @throws AdapterOwnershipError when `options.owner` is set and is not the owner.
   */
  async remove(
    baseKey: string,
    name: string,
    options: RemoveOptions = {},
  ): Promise<AdapterVersion[]> {
    const key = adapterIndexKey(baseKey, name);
    const { version, owner } = options;
    let removed: AdapterVersion[] = [];
    await this.#index.mutate(key, (current): IndexChange => {
      if (current === undefined || current.versions.length === 0) throw notFound(baseKey, name);
      if (owner !== undefined && current.owner !== owner) throw ownedByOther(baseKey, name);
      const kept =
        version === undefined
          ? []
          : current.versions.filter((v) => v.version !== checkAdapterVersion(version));
      if (kept.length === current.versions.length) throw notFound(baseKey, name, version);
      removed = current.versions.filter((v) => !kept.includes(v));
      return kept.length === 0
        ? { put: { ...current, versions: [], deleted: true } }
        : { put: { ...current, versions: kept } };
    });
    // The index no longer names these versions; their objects go now, or to the sweep.
    await this.#deleteObjects(
      removed.flatMap((v) => [
        adapterObjectName(baseKey, name, v.version, "config"),
        adapterObjectName(baseKey, name, v.version, "weights"),
      ]),
    );
    return removed;
  }

  /**
   * Sets which tenants besides `owner` may see and run an adapter (every version): tenant
   * names, or `*` for every tenant; empty makes it private again.
   *
   * @returns the record as changed.
   * @throws AdapterNotFoundError when there is no such adapter, or it is another tenant's (a
   *   tenant learns nothing of adapters it cannot see).
   * @throws InvalidSharingError for a name that cannot be a tenant's.
   */
  async share(
    baseKey: string,
    name: string,
    owner: string,
    sharedWith: readonly string[],
  ): Promise<AdapterRecord> {
    const bad = sharedWith.find((t) => t !== "*" && !isTenantName(t));
    if (bad !== undefined) {
      throw new InvalidSharingError(`cannot share with ${JSON.stringify(bad)}: not a tenant name`);
    }
    const key = adapterIndexKey(baseKey, name);
    let changed: AdapterRecord | undefined;
    await this.#index.mutate(key, (current): IndexChange => {
      if (current === undefined || current.versions.length === 0 || current.owner !== owner) {
        throw notFound(baseKey, name);
      }
      changed = { ...current, sharedWith: [...new Set(sharedWith)].sort() };
      return { put: changed };
    });
    return changed as AdapterRecord;
  }

  /**
   * Writes a version's `adapter_config.json` and `adapter_model.safetensors` into `dir`,
   * atomically (staged beside it and renamed) and checked against the index's digests. A
   * `dir` that already holds exactly those files is kept as it is.
   *
   * @returns `dir`.
   * @throws AdapterNotFoundError when the version does not exist.
   * @throws AdapterIntegrityError when the stored files are missing or differ.
   */
  async fetch(baseKey: string, name: string, version: number, dir: string): Promise<string> {
    const found = await this.resolve(baseKey, name, version);
    return fetchFilesInto(
      this.#objects,
      (["config", "weights"] as const).map((file) => ({
        object: adapterObjectName(baseKey, name, version, file),
        file: ADAPTER_FILES[file],
        digest: found.files[file],
      })),
      dir,
    );
  }

  /**
   * Every adapter's record, then every change as it happens, for a cache that must follow
   * the index (ingress resolving `base:name`). Call `stop()` to end it.
   */
  async watch(): Promise<AdapterWatch> {
    const entries = await this.#index.kv.watch({ key: ">" });
    return adapterWatch(entries, (key, error) => {
      this.#logger?.warn({ err: error, key }, "adapter index entry unreadable; skipped");
    });
  }

  /**
   * Removes what interrupted uploads left: objects no published version names, and empty
   * reservations of new names, when older than `olderThanMs` (so uploads in progress are
   * left alone).
   */
  async sweep(
    olderThanMs: number = DEFAULT_SWEEP_AGE_MS,
    nowMs: number = Date.now(),
  ): Promise<SweepResult> {
    const live = new Set<string>();
    let reservations = 0;
    for await (const key of await this.#index.kv.keys(">")) {
      const entry = await this.#index.read(key);
      const id = parseAdapterIndexKey(key);
      if (entry === undefined || id === undefined) continue;
      const { record } = entry;
      if (
        record.versions.length === 0 &&
        record.deleted !== true &&
        nowMs - Date.parse(record.createdAt) > olderThanMs
      ) {
        if (await this.#release(key, record.lastVersion, record.owner)) reservations++;
        continue;
      }
      for (const version of record.versions) {
        live.add(adapterObjectName(id.baseKey, id.name, version.version, "config"));
        live.add(adapterObjectName(id.baseKey, id.name, version.version, "weights"));
      }
    }
    let objects = 0;
    for (const info of await this.#objects.list()) {
      if (info.deleted || live.has(info.name)) continue;
      if (nowMs - Date.parse(info.mtime) <= olderThanMs) continue;
      await this.#objects.delete(info.name);
      objects++;
    }
    return { objects, reservations };
  }

  async #put(name: string, data: Uint8Array): Promise<FileDigest> {
    await this.#objects.putBlob({ name }, data);
    return { sha256: createHash("sha256").update(data).digest("hex"), bytes: data.byteLength };
  }

  /** Best effort: a failure is logged and left to {@link sweep}. */
  async #deleteObjects(names: readonly string[]): Promise<void> {
    for (const name of names) {
      try {
        const info = await this.#objects.info(name);
        if (info !== null && !info.deleted) await this.#objects.delete(name);
      } catch (error) {
        this.#logger?.warn(
          { err: error, object: name },
          "adapter object delete failed; the sweep retries",
        );
      }
    }
  }

  /**
   * Gives up a reservation that never became a version, when the record is still the owner's,
   * has no versions and no later upload reserved a number since: a name no version was ever
   * published under leaves the index, any other is marked deleted so that its numbers stay
   * used. Best effort, like {@link #deleteObjects}.
   */
  async #release(key: string, version: number, owner: string): Promise<boolean> {
    try {
      const { change } = await this.#index.mutate(key, (current): IndexChange => {
        if (
          current?.owner !== owner ||
          current.deleted === true ||
          current.versions.length > 0 ||
          current.lastVersion !== version
        ) {
          return { keep: true };
        }
        return version === 1 ? { delete: true } : { put: { ...current, deleted: true } };
      });
      return !("keep" in change);
    } catch (error) {
      this.#logger?.warn(
        { err: error, key },
        "adapter reservation release failed; the sweep retries",
      );
      return false;
    }
  }
}

function notFound(baseKey: string, name: string, version?: number): AdapterNotFoundError {
  return new AdapterNotFoundError(
    version === undefined
      ? `no adapter ${name} for ${baseKey}`
      : `adapter ${name} for ${baseKey} has no version ${version}`,
  );
}

function ownedByOther(baseKey: string, name: string): AdapterOwnershipError {
  return new AdapterOwnershipError(`adapter ${name} for ${baseKey} belongs to another tenant`);
}
