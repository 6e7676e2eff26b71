import type { Catalog } from "@shoal/config";
import type { RequestTimings } from "@shoal/gateway";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Request latency, 1 ms to 60 s: a short embedding on an idle cluster up to a long generation. */
const SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** The phases of `Server-Timing`, as the answers' timings carry them. */
type Phase = "annotate" | "queue" | "batch" | "compute";

/** The `model` label of a request whose model is not in the catalog, or that names none. */
export const UNKNOWN_MODEL = "unknown";

/**
 * Ingress's request metrics. Labels stay bounded: `route` is one of the API's routes or RPCs
 * (`unknown` for a path that is none), `model` a catalog model id (an adapter's requests count
 * under their base model; any name the catalog lacks, and requests refused before a model was
 * read, under `unknown`), `outcome` `ok` or the error kind.
 */
export class IngressMetrics {
  readonly #requests: Counter<"route" | "model" | "outcome">;
  readonly #duration: Histogram<"route" | "model">;
  readonly #phases: Histogram<"route" | "model" | "phase">;
  readonly #inFlight: Gauge<"route">;
  /** By route and model: the catalog's models times the API's routes, a bounded set. */
  readonly #series = new Map<string, Series>();
  readonly #models: ReadonlySet<string>;

  constructor(registry: Registry, catalog: Catalog) {
    this.#models = new Set(catalog.models.map((m) => m.id));
    const registers = [registry];
    this.#requests = new Counter({
      name: "shoal_ingress_requests_total",
      help: "Requests answered, by route, model and outcome (ok, or the error kind).",
      labelNames: ["route", "model", "outcome"],
      registers,
    });
    this.#duration = new Histogram({
      name: "shoal_ingress_request_duration_seconds",
      help: "Time from a request's arrival to its answer (to its first event when streamed).",
      labelNames: ["route", "model"],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.#phases = new Histogram({
      name: "shoal_ingress_request_phase_seconds",
      help: "Where an answered request's time went: annotate, queue, batch, compute.",
      labelNames: ["route", "model", "phase"],
      buckets: SECONDS_BUCKETS,
      registers,
    });
    this.#inFlight = new Gauge({
      name: "shoal_ingress_in_flight_requests",
      help: "Requests being served now.",
      labelNames: ["route"],
      registers,
    });
  }
  /**
   * Counts answers ingress dropped because their request part was already answered: a worker
   * cut off past its ack wait answering an item that was redelivered and answered elsewhere.
   * Clients never see them; a rising count shows work done twice.
   */
  static countDuplicateAnswers(registry: Registry, read: () => number): void {
    new Counter({
      name: "shoal_ingress_duplicate_answers_total",
      help: "Answers dropped because their request part had already been answered (redelivered work done twice).",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** Marks a request started; the returned function records how it ended. */
  start(
    route: string,
    requested: string,
  ): (outcome: string, timings: RequestTimings | undefined) => void {
    const started = performance.now();
    const model = this.#modelLabel(requested);
    const series = this.#seriesOf(route, model);
    series.inFlight.inc();
    return (outcome, timings) => {
      series.inFlight.dec();
      (outcome === "ok" ? series.ok : this.#requests.labels({ route, model, outcome })).inc();
      series.duration.observe((performance.now() - started) / 1000);
      if (timings === undefined) return;
      series.annotate.observe(timings.annotateUs / 1e6);
      series.queue.observe(timings.queueUs / 1e6);
      series.batch.observe(timings.batchUs / 1e6);
      series.compute.observe(timings.computeUs / 1e6);
    };
  }

  /**
   * A request refused before it was served (malformed, too large, an unknown route, method or
   * model): counted once, under `unknown` for its model.
   */
  refused(route: string, outcome: string): void {
    this.#requests.inc({ route, model: UNKNOWN_MODEL, outcome });
  }

  /** `requested` when the catalog has it, its base model for `base:adapter`, else `unknown`. */
  #modelLabel(requested: string): string {
    if (this.#models.has(requested)) return requested;
    const base = requested.slice(0, requested.indexOf(":"));
    return this.#models.has(base) ? base : UNKNOWN_MODEL;
  }

  /**
   * The children a (route, model) pair records into, made once: looking them up by their labels
   * on every request would hash the label values each time, on the request path.
   */
  #seriesOf(route: string, model: string): Series {
    const key = `${route}\u0000${model}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      const phase = (name: Phase) => this.#phases.labels({ route, model, phase: name });
      series = {
        inFlight: this.#inFlight.labels({ route }),
        ok: this.#requests.labels({ route, model, outcome: "ok" }),
        duration: this.#duration.labels({ route, model }),
        annotate: phase("annotate"),
        queue: phase("queue"),
        batch: phase("batch"),
        compute: phase("compute"),
      };
      this.#series.set(key, series);
    }
    return series;
  }
}

interface Series {
  readonly inFlight: Gauge.Internal<"route">;
  readonly ok: Counter.Internal;
  readonly duration: Histogram.Internal<"route" | "model">;
  readonly annotate: Histogram.Internal<"route" | "model" | "phase">;
  readonly queue: Histogram.Internal<"route" | "model" | "phase">;
  readonly batch: Histogram.Internal<"route" | "model" | "phase">;
  readonly compute: Histogram.Internal<"route" | "model" | "phase">;
}
