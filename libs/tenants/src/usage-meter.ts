import { randomUUID } from "node:crypto";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";

/** The KV bucket holding every tenant's usage, summed over every ingress process. */
export const USAGE_BUCKET = "SHOAL_USAGE";

/** One tenant's use of one model since the bucket was created. */
export interface UsageRecord {
  readonly tenant: string;
  /** The catalog model id. */
  readonly model: string;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** ISO 8601: when an ingress last added to it. */
  readonly updatedAt: string;
}

/** How many recent write ids a record keeps, to recognise a retried write that had landed. */
const KEPT_WRITES = 32;

/** The stored form: the record and the ids of the last writes added to it. */
type StoredUsage = UsageRecord & { readonly writes?: readonly string[] };

interface Delta {
  /** Set on its first attempt; a retry with the same id is skipped if that write landed. */
  writeId?: string;
  tenant: string;
  model: string;
  modelKey: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
}

/** Attempts of one compare-and-set add before the delta waits for the next flush. */
const MAX_ATTEMPTS = 5;

/**
 * Per-tenant usage, counted in memory on the request path and added to the `SHOAL_USAGE` KV
 * bucket every few seconds with compare-and-set, so every ingress process's counts add up in
 * one place the admin API reads. A delta that cannot be written (NATS away) stays in memory and
 * goes with the next flush; nothing is counted twice, and at most one flush interval of usage
 * is lost if a process dies.
 */
export class UsageMeter {
  readonly #kv: KV;
  readonly #logger: Logger;
  readonly #pending = new Map<string, Delta>();
  /** Deltas whose write may or may not have landed (the reply never came): retried as they are. */
  readonly #unsure: [string, Delta][] = [];
  readonly #timer: NodeJS.Timeout;
  #flushing: Promise<void> = Promise.resolve();

  private constructor(kv: KV, logger: Logger, flushEveryMs: number) {
    this.#kv = kv;
    this.#logger = logger;
    this.#timer = setInterval(() => {
      void this.flush();
    }, flushEveryMs);
    this.#timer.unref();
  }

  /** Opens the bucket, creating it (with `replicas` copies across a NATS cluster) if absent. */
  static async open(
    nc: NatsConnection,
    logger: Logger,
    options: { readonly flushEveryMs?: number; readonly replicas?: number } = {},
  ): Promise<UsageMeter> {
    const kv = await new Kvm(nc).create(USAGE_BUCKET, {
      history: 1,
      replicas: options.replicas ?? 1,
    });
    return new UsageMeter(kv, logger, options.flushEveryMs ?? 5000);
  }

  /** Counts one answered request. `modelKey` (the catalog key) names the KV entry. */
  record(
    tenant: string,
    model: string,
    modelKey: string,
    inputTokens: number,
    outputTokens: number,
  ): void {
    const key = `usage.${tenant}.${modelKey}`;
    let delta = this.#pending.get(key);
    if (delta === undefined) {
      delta = { tenant, model, modelKey, requests: 0, inputTokens: 0, outputTokens: 0 };
      this.#pending.set(key, delta);
    }
    delta.requests += 1;
    delta.inputTokens += inputTokens;
    delta.outputTokens += outputTokens;
  }

  /** Adds what was counted since the last flush to the bucket; one flush at a time. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#flushOnce());
    return this.#flushing;
  }

  /** Everything the bucket holds, of one tenant when named, by tenant then model. */
  async read(tenant?: string): Promise<UsageRecord[]> {
    const records: UsageRecord[] = [];
    const keys = await this.#kv.keys(tenant === undefined ? "usage.>" : `usage.${tenant}.>`);
    for await (const key of keys) {
      const entry = await this.#kv.get(key);
      if (entry === null || entry.operation !== "PUT") continue;
      const stored = entry.json<StoredUsage>();
      records.push({
        tenant: stored.tenant,
        model: stored.model,
        requests: stored.requests,
        inputTokens: stored.inputTokens,
        outputTokens: stored.outputTokens,
        updatedAt: stored.updatedAt,
      });
    }
    return records.sort(
      (a, b) => a.tenant.localeCompare(b.tenant) || a.model.localeCompare(b.model),
    );
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }

  async #flushOnce(): Promise<void> {
    const deltas = [...this.#unsure.splice(0), ...this.#pending.entries()];
    this.#pending.clear();
    for (const [key, delta] of deltas) {
      try {
        await this.#add(key, delta);
      } catch (err) {
        this.#logger.warn({ err, key }, "usage not written; it goes with the next flush");
        // Kept apart with its write id: merged into newer counts, a write that did land after
        // all would be added again.
        this.#unsure.push([key, delta]);
      }
    }
  }

  async #add(key: string, delta: Delta): Promise<void> {
    const writeId = (delta.writeId ??= randomUUID());
    for (let attempt = 1; ; attempt++) {
      const entry = await this.#kv.get(key);
      const current =
        entry === null || entry.operation !== "PUT" ? undefined : entry.json<StoredUsage>();
      if (current?.writes?.includes(writeId) === true) return;
      const next: StoredUsage = {
        tenant: delta.tenant,
        model: delta.model,
        requests: (current?.requests ?? 0) + delta.requests,
        inputTokens: (current?.inputTokens ?? 0) + delta.inputTokens,
        outputTokens: (current?.outputTokens ?? 0) + delta.outputTokens,
        updatedAt: new Date().toISOString(),
        writes: [...(current?.writes ?? []), writeId].slice(-KEPT_WRITES),
      };
      try {
        if (entry === null) await this.#kv.create(key, JSON.stringify(next));
        else await this.#kv.update(key, JSON.stringify(next), entry.revision);
        return;
      } catch (err) {
        // Another ingress added first: read its sum and add to that.
        if (attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }
}
