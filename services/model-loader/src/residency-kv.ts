import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  decodeReplica,
  encodeModel,
  encodeReplica,
  modelKey,
  replicaKey,
  RESIDENCY_BUCKET,
  type ModelRecord,
  type ReplicaRecord,
} from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";

/**
 * Writes this node's residency into the shared KV bucket. A failed write is logged and left:
 * the next change of the same key rewrites it, and the loader's own decisions never depend on
 * reading the bucket back.
 */
export class ResidencyKv {
  readonly #kv: KV;
  readonly #node: string;
  readonly #logger: Logger;

  private constructor(kv: KV, node: string, logger: Logger) {
    this.#kv = kv;
    this.#node = node;
    this.#logger = logger;
  }

  /** Opens (creating when missing) the bucket, and clears this node's replicas left by a previous run. */
  static async open(nc: NatsConnection, node: string, logger: Logger): Promise<ResidencyKv> {
    const kv = await new Kvm(nc).create(RESIDENCY_BUCKET, { history: 1 });
    const self = new ResidencyKv(kv, node, logger);
    for await (const key of await kv.keys("replica.>")) {
      const entry = await kv.get(key);
      if (entry === null || entry.operation !== "PUT") continue;
      try {
        if (decodeReplica(entry.value).node === node) await kv.delete(key);
      } catch {
        // Not ours to judge: another version's record. Left for its writer.
      }
    }
    return self;
  }

  replica(record: Omit<ReplicaRecord, "node">): void {
    this.#write(replicaKey(record.model, record.worker), () =>
      encodeReplica({ ...record, node: this.#node }),
    );
  }

  removeReplica(model: string, worker: string): void {
    const key = replicaKey(model, worker);
    this.#kv.delete(key).catch((err: unknown) => {
      this.#logger.warn({ err, key }, "residency delete failed");
    });
  }

  model(record: ModelRecord): void {
    this.#write(modelKey(record.model), () => encodeModel(record));
  }

  #write(key: string, value: () => Uint8Array): void {
    this.#kv.put(key, value()).catch((err: unknown) => {
      this.#logger.warn({ err, key }, "residency write failed");
    });
  }
}
