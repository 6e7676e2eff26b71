import type { ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import type { Catalog } from "@shoal/config";
import { modelConsumerName } from "@shoal/jetstream";
import { perScrape, type Logger } from "@shoal/telemetry";
import { Gauge, type Registry } from "prom-client";

/**
 * The work queue as JetStream sees it, per model, read from each model's consumer when
 * scraped (one request to the server per model and scrape, nothing on the request path):
 * work waiting, work held by workers, and work delivered more than once and not yet done.
 */
export function registerQueueMetrics(
  registry: Registry,
  jsm: JetStreamManager,
  stream: string,
  catalog: Catalog,
  logger: Logger,
): void {
  const consumers = perScrape(() => readConsumers(jsm, stream, catalog, logger));
  const gauge = (name: string, help: string, value: (info: ConsumerInfo) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ["model"],
      registers: [registry],
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
}

/** Each catalog model's consumer, by model key; models no worker has served yet have none. */
async function readConsumers(
  jsm: JetStreamManager,
  stream: string,
  catalog: Catalog,
  logger: Logger,
): Promise<Map<string, ConsumerInfo>> {
  const out = new Map<string, ConsumerInfo>();
  for (const model of catalog.models) {
    try {
      out.set(model.key, await jsm.consumers.info(stream, modelConsumerName(model.key)));
    } catch (err) {
      // No consumer yet, or the server is away: the scrape goes on without it.
      logger.debug({ err, model: model.key }, "queue metrics: consumer unavailable");
    }
  }
  return out;
}
