import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from "@opentelemetry/sdk-trace-base";

/**
 * The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, as the OpenTelemetry
 * specification defines them (default `parentbased_always_on`). When nothing would receive the
 * spans (no exporter, no processor) every span is left unrecorded: it keeps its trace and span
 * ids, so logs and propagation still carry them, but costs no attributes, events or export
 * queue on the request path.
 *
 * @throws Error for a sampler name the specification does not define, or a ratio outside 0–1.
 */
export function samplerFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  recorded: boolean,
): Sampler {
  if (!recorded) return new AlwaysOffSampler();
  const name = env["OTEL_TRACES_SAMPLER"]?.trim() || "parentbased_always_on";
  const ratio = (): TraceIdRatioBasedSampler => {
    const raw = env["OTEL_TRACES_SAMPLER_ARG"]?.trim() ?? "";
    const value = raw === "" ? 1 : Number(raw);
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
