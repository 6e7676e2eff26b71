import type { ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import type { Catalog } from "@shoal/config";
import { readModelConsumers, readOldestStored } from "@shoal/jetstream";
import { perScrape, type Logger } from "@shoal/telemetry";
import { Counter, Gauge, type Registry } from "prom-client";

/** Counts a work item as ingress stores it: one of the queue's arrivals. */
export type QueueArrivals = (modelKey: string, bucket: number) => void;

/**
 * The work queue as JetStream sees it, per model, read from each model's consumer and its
 * oldest message when scraped (two requests to the server per model and scrape, nothing on the
 * request path): work waiting, work held by workers, work delivered more than once and not yet
 * done, and how old the oldest unfinished work is. Arrivals are counted as ingress queues them.
 */
export function registerQueueMetrics(
  registry: Registry,
  jsm: JetStreamManager,
  stream: string,
  catalog: Catalog,
  logger: Logger,
): QueueArrivals {
  const keys = catalog.models.map((m) => m.key);
  // No consumer yet, or the server is away: the scrape goes on without that model.
  const unread = (what: string) => (model: string, err: unknown) => {
    logger.debug({ err, model }, `queue metrics: ${what} unavailable`);
  };
  const consumers = perScrape(() => readModelConsumers(jsm, stream, keys, unread("consumer")));
  const gauge = (name: string, help: string, value: (info: ConsumerInfo) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ["model"],
      registers: [registry],
      // Every replica of ingress reads the same consumer: their figures are one, not a sum.
      aggregator: "max",
      async collect() {
        this.reset();
        for (const [model, info] of await consumers()) this.set({ model }, value(info));
      },
    });
  };
  gauge(
    "shoal_queue_pending_messages",
    "Work messages queued for a model and not yet delivered to a worker.",
    (info) => info.num_pending,
  );
  gauge(
    "shoal_queue_held_messages",
    "Work messages delivered to a worker and not yet acknowledged.",
    (info) => info.num_ack_pending,
  );
  gauge(
    "shoal_queue_redelivered_messages",
    "Work messages delivered more than once and not yet acknowledged.",
    (info) => info.num_redelivered,
  );
  const oldest = perScrape(() => readOldestStored(jsm, stream, keys, unread("oldest message")));
  new Gauge({
    name: "shoal_queue_oldest_message_age_seconds",
    help: "Age of a model's oldest unfinished work message (queued or held by a worker); no sample when none is.",
    labelNames: ["model"],
    registers: [registry],
    aggregator: "max",
    async collect() {
      this.reset();
      const now = Date.now();
      for (const [model, storedAt] of await oldest()) {
        this.set({ model }, Math.max(0, now - storedAt) / 1000);
      }
    },
  });
  const arrivals = new Counter({
    name: "shoal_queue_arrivals_total",
    help: "Work items stored in the work stream, by model and length bucket (the bucket's upper edge in tokens).",
    labelNames: ["model", "bucket"],
    registers: [registry],
  });
  return (model, bucket) => {
    arrivals.inc({ model, bucket: String(bucket) });
  };
}
