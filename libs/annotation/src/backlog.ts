import type { JetStreamManager } from "@nats-io/jetstream";
import type { Catalog } from "@shoal/config";
import { modelConsumerName } from "@shoal/jetstream";
import type { Logger } from "@shoal/telemetry";

export interface BacklogOptions {
  readonly jsm: JetStreamManager;
  readonly stream: string;
  readonly catalog: Catalog;
  /** Items queued for one model past which new work for it is refused. @default 50000 */
  readonly maxQueuedPerModel?: number;
  /** How often the queued counts are read from JetStream. @default 250 */
  readonly refreshMs?: number;
  readonly logger: Logger;
}

/**
 * Each model's queued work, read from its consumer's pending count a few times a second, so
 * the annotator can refuse new work for a model whose queue is past its bound (RESOURCE_EXHAUSTED,
 * which clients see as 429 with Retry-After) instead of letting it grow without limit. Reading
 * on a timer keeps the check off the request path; the bound is soft by one refresh interval.
 */
export class Backlog {
  readonly #o: Required<BacklogOptions>;
  readonly #queued = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #refreshing = false;

  constructor(options: BacklogOptions) {
    this.#o = {
      ...options,
      maxQueuedPerModel: options.maxQueuedPerModel ?? 50_000,
      refreshMs: options.refreshMs ?? 250,
    };
  }

  /** Reads the counts once now, then every `refreshMs`. */
  async start(): Promise<void> {
    await this.#refresh();
    this.#timer = setInterval(() => {
      void this.#refresh();
    }, this.#o.refreshMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Items queued for the model at the last reading (0 before any worker created its consumer). */
  queued(modelKey: string): number {
    return this.#queued.get(modelKey) ?? 0;
  }

  /** Whether new work for the model should be refused. */
  full(modelKey: string): boolean {
    return this.queued(modelKey) >= this.#o.maxQueuedPerModel;
  }

  get limit(): number {
    return this.#o.maxQueuedPerModel;
  }

  async #refresh(): Promise<void> {
    if (this.#refreshing) return;
    this.#refreshing = true;
    try {
      await Promise.all(
        this.#o.catalog.models.map(async (model) => {
          try {
            const info = await this.#o.jsm.consumers.info(
              this.#o.stream,
              modelConsumerName(model.key),
            );
            this.#queued.set(model.key, info.num_pending);
          } catch {
            // No consumer yet (no worker has served the model): nothing is being held back.
            this.#queued.delete(model.key);
          }
        }),
      );
    } catch (err) {
      this.#o.logger.warn({ err }, "backlog refresh failed");
    } finally {
      this.#refreshing = false;
    }
  }
}
