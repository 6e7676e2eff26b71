import { JetStreamApiError } from "@nats-io/jetstream";
import { Kvm, type KV, type KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";
import { generateApiKey } from "./api-key.js";
import { DEFAULT_GRANTS, type Grants } from "./grants.js";
import { NO_LIMITS, type TenantLimits } from "./limits.js";
import {
  apiKeyKey,
  decodeKey,
  decodeTenant,
  encodeRecord,
  isTenantName,
  TENANTS_BUCKET,
  tenantKey,
  type KeyRecord,
  type TenantRecord,
} from "./records.js";

/** A change the store refused: the caller's mistake, with what to do instead. */
export class TenantStoreError extends Error {
  override readonly name = "TenantStoreError";
  constructor(
    message: string,
    /** `conflict`: another admin changed the record meanwhile; read it again and retry. */
    readonly code: "invalid" | "exists" | "not_found" | "conflict",
  ) {
    super(message);
  }
}

/** JetStream's answer to a compare-and-set whose expected revision is not the current one. */
const WRONG_LAST_SEQUENCE = 10071;

function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === WRONG_LAST_SEQUENCE;
}

/** Control characters (C0 and DEL): a label is printed in listings and logs as it is. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Longest a label may be: it is shown in listings and logs. */
const MAX_LABEL = 100;

/**
 * Tenants and their API keys in JetStream KV, with a live copy kept by a watch: reads are map
 * lookups (authenticating costs a request nothing), and a change made by any process — a key
 * revoked through the admin API on another host — reaches every copy within moments.
 * Writes use the KV's compare-and-set, so two admins cannot silently overwrite each other.
 */
export class TenantStore {
  readonly #kv: KV;
  readonly #tenants = new Map<string, TenantRecord>();
  readonly #keys = new Map<string, KeyRecord>();
  readonly #stop: () => void;

  private constructor(kv: KV, stop: () => void) {
    this.#kv = kv;
    this.#stop = stop;
  }

  /**
   * Opens (creating it if absent, with `replicas` copies across a NATS cluster) the bucket and
   * resolves once the copy holds all of it.
   */
  static async open(
    nc: NatsConnection,
    logger: Logger,
    options: { readonly replicas?: number } = {},
  ): Promise<TenantStore> {
    const kv = await new Kvm(nc).create(TENANTS_BUCKET, {
      history: 5,
      replicas: options.replicas ?? 1,
    });
    const initial = (await kv.status()).values;
    const watch = await kv.watch({ key: ">" });
    let caughtUp: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      caughtUp = resolve;
    });
    if (initial === 0) caughtUp();
    const store = new TenantStore(kv, () => {
      watch.stop();
    });
    void (async () => {
      for await (const entry of watch) {
        store.#apply(entry, logger);
        // The watch delivers what the bucket held first; `delta` counts what is left of it.
        if (entry.isUpdate || entry.delta === 0) caughtUp();
      }
    })().catch((err: unknown) => {
      logger.error({ err }, "tenant watch ended; key changes no longer reach this process");
    });
    await ready;
    return store;
  }

  stop(): void {
    this.#stop();
  }

  tenant(name: string): TenantRecord | undefined {
    return this.#tenants.get(name);
  }

  tenants(): TenantRecord[] {
    return [...this.#tenants.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The record of the key with this prefix, revoked ones included. */
  key(prefix: string): KeyRecord | undefined {
    return this.#keys.get(prefix);
  }

  /** Keys, newest first; of one tenant when named. */
  keys(tenant?: string): KeyRecord[] {
    return [...this.#keys.values()]
      .filter((k) => tenant === undefined || k.tenant === tenant)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  async createTenant(
    name: string,
    grants: Grants = DEFAULT_GRANTS,
    limits: TenantLimits = NO_LIMITS,
  ): Promise<TenantRecord> {
    if (!isTenantName(name)) {
      throw new TenantStoreError(
        `tenant name '${name}' must be 1–63 lower-case letters, digits or dashes, starting with a letter or digit`,
        "invalid",
      );
    }
    const record: TenantRecord = {
      name,
      grants,
      ...(Object.keys(limits).length === 0 ? {} : { limits }),
      createdAt: new Date().toISOString(),
    };
    try {
      await this.#kv.create(tenantKey(name), encodeRecord(record));
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new TenantStoreError(`tenant ${name} already exists`, "exists");
      }
      throw err;
    }
    this.#tenants.set(name, record);
    return record;
  }

  /** Changes a tenant's grants, its limits, or both; what `change` leaves out stays. */
  async updateTenant(
    name: string,
    change: { readonly grants?: Grants; readonly limits?: TenantLimits },
  ): Promise<TenantRecord> {
    const entry = await this.#kv.get(tenantKey(name));
    if (entry === null || entry.operation !== "PUT") {
      throw new TenantStoreError(`no tenant ${name}`, "not_found");
    }
    const current = decodeTenant(entry.value);
    const limits = change.limits ?? current.limits ?? NO_LIMITS;
    const record: TenantRecord = {
      name: current.name,
      grants: change.grants ?? current.grants,
      ...(Object.keys(limits).length === 0 ? {} : { limits }),
      createdAt: current.createdAt,
    };
    await this.#update(tenantKey(name), encodeRecord(record), entry.revision);
    this.#tenants.set(name, record);
    return record;
  }

  /** A new key for `tenant`; its full text is in the result and nowhere else, ever. */
  async createKey(tenant: string, label: string): Promise<{ key: string; record: KeyRecord }> {
    if (
      this.#tenants.get(tenant) === undefined &&
      (await this.#kv.get(tenantKey(tenant))) === null
    ) {
      throw new TenantStoreError(`no tenant ${tenant}`, "not_found");
    }
    if (label.length > MAX_LABEL || CONTROL.test(label)) {
      throw new TenantStoreError(
        `a key's label is at most ${MAX_LABEL} printable characters`,
        "invalid",
      );
    }
    const made = generateApiKey();
    const record: KeyRecord = {
      prefix: made.prefix,
      tenant,
      digest: made.digest,
      label,
      createdAt: new Date().toISOString(),
    };
    // A prefix collision (40 random bits) is refused by create, never overwritten.
    await this.#kv.create(apiKeyKey(made.prefix), encodeRecord(record));
    this.#keys.set(made.prefix, record);
    return { key: made.key, record };
  }

  /** Revokes a key: every process refuses it once its watch delivers the change. */
  async revokeKey(prefix: string): Promise<KeyRecord> {
    const entry = await this.#kv.get(apiKeyKey(prefix));
    if (entry === null || entry.operation !== "PUT") {
      throw new TenantStoreError(`no key ${prefix}`, "not_found");
    }
    const current = decodeKey(entry.value);
    if (current.revokedAt !== undefined) return current;
    const record: KeyRecord = { ...current, revokedAt: new Date().toISOString() };
    await this.#update(apiKeyKey(prefix), encodeRecord(record), entry.revision);
    this.#keys.set(prefix, record);
    return record;
  }

  /** A new key with the old one's tenant and label; the old one is revoked. */
  async rotateKey(prefix: string): Promise<{ key: string; record: KeyRecord }> {
    const old = this.#keys.get(prefix) ?? (await this.#read(prefix));
    const made = await this.createKey(old.tenant, old.label);
    await this.revokeKey(prefix);
    return made;
  }

  /** Writes `value` only if the record is still at `revision`: no change overwrites another. */
  async #update(key: string, value: Uint8Array, revision: number): Promise<void> {
    try {
      await this.#kv.update(key, value, revision);
    } catch (err) {
      if (isWrongLastSequence(err)) {
        throw new TenantStoreError(
          `${key} was changed by someone else meanwhile; read it again and retry`,
          "conflict",
        );
      }
      throw err;
    }
  }

  async #read(prefix: string): Promise<KeyRecord> {
    const entry = await this.#kv.get(apiKeyKey(prefix));
    if (entry === null || entry.operation !== "PUT") {
      throw new TenantStoreError(`no key ${prefix}`, "not_found");
    }
    return decodeKey(entry.value);
  }

  #apply(entry: KvWatchEntry, logger: Logger): void {
    const [kind, id] = entry.key.split(".");
    if (id === undefined) return;
    const gone = entry.operation !== "PUT";
    try {
      if (kind === "tenant") {
        if (gone) this.#tenants.delete(id);
        else this.#tenants.set(id, decodeTenant(entry.value));
      } else if (kind === "key") {
        if (gone) this.#keys.delete(id);
        else this.#keys.set(id, decodeKey(entry.value));
      }
    } catch (err) {
      // An unreadable key record is dropped: a key nobody can read must not authenticate.
      if (kind === "key") this.#keys.delete(id);
      logger.warn({ err, key: entry.key }, "unreadable tenant record ignored");
    }
  }
}
