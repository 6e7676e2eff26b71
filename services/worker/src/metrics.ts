import { Counter, Histogram, type Registry } from "prom-client";

/** Powers of two up to the sidecar's largest batch (1024 inputs). */
const INPUT_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/** Padded tokens a batch: one short input up to the default 16k ceiling and beyond. */
const TOKEN_BUCKETS = [16, 64, 256, 1024, 4096, 16_384, 65_536];
/** Batch compute, 1 ms (an accelerator's short batch) to 10 s (a CPU's long one). */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Measured over predicted batch time: 1 is a perfect prediction. */
const RATIO_BUCKETS = [0.25, 0.5, 0.8, 0.9, 1, 1.1, 1.25, 2, 4];

/** What one finished batch tells the metrics. */
export interface BatchMeasurement {
  readonly inputs: number;
  readonly paddedTokens: number;
  readonly computeSeconds: number;
  /** What the latency model predicted for it before it ran, seconds. */
  readonly predictedSeconds: number;
}

/** Why a work message was taken off the queue unanswered by the model. */
export type DeadLetterReason = "malformed" | "gave_up";

/** What any model's puller counts, batches or streams alike. */
export interface PullerMetrics {
  /** A work message moved to the dead-letter stream. */
  deadLettered(reason: DeadLetterReason): void;
}

/** A generator's streams, its label bound. */
export interface GeneratorMetrics extends PullerMetrics {
  /** The first tokens of a sequence went out, `seconds` after the request was queued. */
  firstToken(seconds: number): void;
  /** A generation item finished: all its sequences done, or failed. */
  finished(outcome: "ok" | "failed"): void;
}

/** One model's batch metrics, its label bound. */
export interface ModelBatchMetrics extends PullerMetrics {
  batchDone(batch: BatchMeasurement): void;
  batchFailed(): void;
  /** Items answered DEADLINE_EXCEEDED without running: they expired in the queue. */
  expired(items: number): void;
  /** Items pulled and handed back (they did not fit the batch being formed). */
  putBack(items: number): void;
}

/**
 * A worker's batch metrics, by model key (a bounded label: the models the catalog serves).
 * Names follow Prometheus conventions: base units, `_total` counters.
 */
export class WorkerMetrics {
  readonly #batches: Counter<"model" | "outcome">;
  readonly #inputs: Histogram<"model">;
  readonly #paddedTokens: Histogram<"model">;
  readonly #compute: Histogram<"model">;
  readonly #prediction: Histogram<"model">;
  readonly #expired: Counter<"model">;
  readonly #putBack: Counter<"model">;
  readonly #deadLettered: Counter<"model" | "reason">;
  readonly #firstToken: Histogram<"model">;
  readonly #generations: Counter<"model" | "outcome">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#batches = new Counter({
      name: "shoal_worker_batches_total",
      help: "Batches run on the sidecar, by outcome (ok, failed).",
      labelNames: ["model", "outcome"],
      registers,
    });
    this.#inputs = new Histogram({
      name: "shoal_worker_batch_inputs",
      help: "Inputs per batch.",
      labelNames: ["model"],
      buckets: INPUT_BUCKETS,
      registers,
    });
    this.#paddedTokens = new Histogram({
      name: "shoal_worker_batch_padded_tokens",
      help: "Padded tokens per batch (inputs times the longest input's estimated tokens).",
      labelNames: ["model"],
      buckets: TOKEN_BUCKETS,
      registers,
    });
    this.#compute = new Histogram({
      name: "shoal_worker_batch_compute_seconds",
      help: "Sidecar compute per batch: tokenisation, forward pass, pooling or head.",
      labelNames: ["model"],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.#prediction = new Histogram({
      name: "shoal_worker_batch_time_over_predicted_ratio",
      help: "Measured batch compute over the latency model's prediction for it.",
      labelNames: ["model"],
      buckets: RATIO_BUCKETS,
      registers,
    });
    this.#expired = new Counter({
      name: "shoal_worker_expired_items_total",
      help: "Items answered DEADLINE_EXCEEDED unrun: their deadline passed in the queue.",
      labelNames: ["model"],
      registers,
    });
    this.#putBack = new Counter({
      name: "shoal_worker_put_back_items_total",
      help: "Items pulled and handed back because they did not fit the batch being formed.",
      labelNames: ["model"],
      registers,
    });
    this.#deadLettered = new Counter({
      name: "shoal_worker_dead_lettered_messages_total",
      help: "Work messages moved to the dead-letter stream: malformed, or given up after their deliveries.",
      labelNames: ["model", "reason"],
      registers,
    });
    this.#firstToken = new Histogram({
      name: "shoal_worker_generation_first_token_seconds",
      help: "From a generation request's queueing to its sequence's first tokens leaving the worker.",
      labelNames: ["model"],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.#generations = new Counter({
      name: "shoal_worker_generations_total",
      help: "Generation items finished, by outcome (ok, failed).",
      labelNames: ["model", "outcome"],
      registers,
    });
  }

  #deadLetters(key: string): PullerMetrics["deadLettered"] {
    const malformed = this.#deadLettered.labels({ model: key, reason: "malformed" });
    const gaveUp = this.#deadLettered.labels({ model: key, reason: "gave_up" });
    return (reason) => {
      (reason === "malformed" ? malformed : gaveUp).inc();
    };
  }

  /** The metrics of generator `key`. */
  forGenerator(key: string): GeneratorMetrics {
    const firstToken = this.#firstToken.labels({ model: key });
    const ok = this.#generations.labels({ model: key, outcome: "ok" });
    const failed = this.#generations.labels({ model: key, outcome: "failed" });
    return {
      deadLettered: this.#deadLetters(key),
      firstToken: (seconds) => {
        firstToken.observe(seconds);
      },
      finished: (outcome) => {
        (outcome === "ok" ? ok : failed).inc();
      },
    };
  }

  /** The metrics of model `key`. */
  forModel(key: string): ModelBatchMetrics {
    const labels = { model: key };
    const inputs = this.#inputs.labels(labels);
    const paddedTokens = this.#paddedTokens.labels(labels);
    const compute = this.#compute.labels(labels);
    const prediction = this.#prediction.labels(labels);
    const ok = this.#batches.labels({ ...labels, outcome: "ok" });
    const failed = this.#batches.labels({ ...labels, outcome: "failed" });
    const expired = this.#expired.labels(labels);
    const putBack = this.#putBack.labels(labels);
    return {
      deadLettered: this.#deadLetters(key),
      batchDone(batch) {
        ok.inc();
        inputs.observe(batch.inputs);
        paddedTokens.observe(batch.paddedTokens);
        compute.observe(batch.computeSeconds);
        if (batch.predictedSeconds > 0) {
          prediction.observe(batch.computeSeconds / batch.predictedSeconds);
        }
      },
      batchFailed: () => {
        failed.inc();
      },
      expired: (items) => {
        if (items > 0) expired.inc(items);
      },
      putBack: (items) => {
        if (items > 0) putBack.inc(items);
      },
    };
  }
}
