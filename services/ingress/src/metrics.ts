import type { RequestTimings } from "@shoal/gateway";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Request latency, 1 ms to 60 s: a short embedding on an idle cluster up to a long generation. */
const SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** The phases of `Server-Timing`, as the answers' timings carry them. */
const PHASES = ["annotate", "queue", "batch", "compute"] as const;

/**
 * Ingress's request metrics. Labels stay bounded: `route` is one of the API's routes or RPCs,
 * `model` a catalog model (requests for a model the catalog lacks are refused before they are
 * counted here), `outcome` `ok` or the error kind.
 */
export class IngressMetrics {
  readonly #requests: Counter<"route" | "model" | "outcome">;
  readonly #duration: Histogram<"route" | "model">;
  readonly #phases: Histogram<"route" | "model" | "phase">;
  readonly #inFlight: Gauge<"route">;

  constructor(registry: Registry) {
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

  /** Marks a request started; the returned function records how it ended. */
  start(
    route: string,
    model: string,
  ): (outcome: string, timings: RequestTimings | undefined) => void {
    const started = performance.now();
    const inFlight = this.#inFlight.labels({ route });
    inFlight.inc();
    return (outcome, timings) => {
      inFlight.dec();
      this.#requests.labels({ route, model, outcome }).inc();
      this.#duration.labels({ route, model }).observe((performance.now() - started) / 1000);
      if (timings === undefined) return;
      for (const phase of PHASES) {
        this.#phases.labels({ route, model, phase }).observe(timings[`${phase}Us`] / 1e6);
      }
    };
  }
}
