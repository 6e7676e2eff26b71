import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from "@opentelemetry/sdk-trace-base";

/**
 * Share of new traces Shoal records when `OTEL_TRACES_SAMPLER` is unset. Recording every
 * request cost up to a third of the two-core machine's capacity in the overhead bench; one in
 * a hundred costs nothing measurable there (docs/benchmarks.md, "Observability overhead"). A
 * request that arrives with a sampled `traceparent` is always traced.
 */
export const DEFAULT_TRACE_RATIO = 0.01;

/**
 * The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, as the OpenTelemetry
 * specification defines them. Unset, Shoal samples parent-based at {@link DEFAULT_TRACE_RATIO}
 * (the specification's default, `parentbased_always_on`, is one setting away). When nothing
 * would receive the spans (no exporter, no processor) every span is left unrecorded: it keeps
 * its trace and span ids, so logs and propagation still carry them, but costs no attributes,
 * events or export queue on the request path.
 *
 * @throws Error for a sampler name the specification does not define, or a ratio outside 0–1.
 */
export function samplerFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  recorded: boolean,
): Sampler {
  if (!recorded) return new AlwaysOffSampler();
  const named = env["OTEL_TRACES_SAMPLER"]?.trim() ?? "";
  const name = named === "" ? "parentbased_traceidratio" : named;
  const ratio = (): TraceIdRatioBasedSampler => {
    const raw = env["OTEL_TRACES_SAMPLER_ARG"]?.trim() ?? "";
    // The specification's default ratio for a named ratio sampler is 1.
    const value = raw === "" ? (named === "" ? DEFAULT_TRACE_RATIO : 1) : Number(raw);
    if (!(value >= 0 && value <= 1)) {
      throw new Error(`OTEL_TRACES_SAMPLER_ARG=${raw} is not a ratio between 0 and 1`);
    }
    return new TraceIdRatioBasedSampler(value);
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      throw new Error(
        `OTEL_TRACES_SAMPLER=${name} is not supported; use always_on, always_off, traceidratio or their parentbased_ forms`,
      );
  }
}
