import { Kvm, type KV, type KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "@shoal/telemetry";
import { decodeReplica, RESIDENCY_BUCKET } from "./records.js";
import type { ReplicaState } from "./snapshot.js";

/**
 * Whether a model can answer now: `resident` (a copy serves it), `loading` (a copy is on its
 * way), `absent` (model-loaders place models and none has placed this one) or `unmanaged`
 * (the bucket is empty: no model-loader runs, workers load their models themselves, so
 * ingress cannot know and must not refuse).
 */
export type Availability = "resident" | "loading" | "absent" | "unmanaged";

/**
 * Ingress's live copy of the residency bucket: every replica record, kept current by a KV
 * watch. Reads are synchronous map lookups, so checking residency costs a request nothing.
 */
export class ResidencyView {
  /** model key → worker → replica state */
  readonly #replicas = new Map<string, Map<string, ReplicaState>>();
  /** Whether any model-loader has written to the bucket. */
  #managed = false;
  readonly #stop: () => void;

  private constructor(stop: () => void) {
    this.#stop = stop;
  }

  /** Opens (creating it if absent, as the model-loader would) the bucket and watches it. */
  static async start(nc: NatsConnection, logger: Logger): Promise<ResidencyView> {
    const kv: KV = await new Kvm(nc).create(RESIDENCY_BUCKET, { history: 1 });
    const watch = await kv.watch({ key: ">" });
    const view = new ResidencyView(() => {
      watch.stop();
    });
    void (async () => {
      for await (const entry of watch) view.#apply(entry, logger);
    })().catch((err: unknown) => {
      logger.warn({ err }, "residency watch ended");
    });
    return view;
  }

  availability(modelKey: string): Availability {
    const states = [...(this.#replicas.get(modelKey)?.values() ?? [])];
    if (states.includes("resident")) return "resident";
    if (states.includes("loading")) return "loading";
    return this.#managed ? "absent" : "unmanaged";
  }

  stop(): void {
    this.#stop();
  }

  #apply(entry: KvWatchEntry, logger: Logger): void {
    this.#managed = true;
    const [kind, model, worker] = entry.key.split(".");
    if (kind !== "replica" || model === undefined || worker === undefined) return;
    const workers = this.#replicas.get(model) ?? new Map<string, ReplicaState>();
    this.#replicas.set(model, workers);
    if (entry.operation !== "PUT") {
      workers.delete(worker);
      return;
    }
    try {
      workers.set(worker, decodeReplica(entry.value).state);
    } catch (err) {
      logger.warn({ err, key: entry.key }, "unreadable replica record ignored");
    }
  }
}
