import { randomBytes } from "node:crypto";
import { ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { SamplingDecision } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { samplerFromEnv } from "./sampler.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";

function decide(env: Record<string, string>, recorded = true, traceId = TRACE_ID) {
  return samplerFromEnv(env, recorded).shouldSample(
    ROOT_CONTEXT,
    traceId,
    "span",
    SpanKind.SERVER,
    {},
    [],
  ).decision;
}

describe("samplerFromEnv", () => {
  it("records one new trace in a hundred by default, and nothing when no one would receive the spans", () => {
    const ids = Array.from({ length: 2000 }, () => randomBytes(16).toString("hex"));
    const kept = ids.filter((id) => decide({}, true, id) === SamplingDecision.RECORD_AND_SAMPLED);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(ids.length / 20);
    expect(decide({ OTEL_TRACES_SAMPLER: "parentbased_always_on" })).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(decide({}, false)).toBe(SamplingDecision.NOT_RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: "always_on" }, false)).toBe(SamplingDecision.NOT_RECORD);
  });

  it("follows the sampler the environment names", () => {
    expect(decide({ OTEL_TRACES_SAMPLER: "always_off" })).toBe(SamplingDecision.NOT_RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" })).toBe(
      SamplingDecision.NOT_RECORD,
    );
    expect(
      decide({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "1" }),
    ).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });

  it("keeps a sampled parent's decision under a parent-based sampler, the default included", () => {
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: TRACE_ID,
      spanId: "00f067aa0ba902b7",
      traceFlags: 1,
    });
    expect(
      samplerFromEnv({}, true).shouldSample(parent, TRACE_ID, "s", SpanKind.SERVER, {}, [])
        .decision,
    ).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    const sampler = samplerFromEnv({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }, true);
    expect(sampler.shouldSample(parent, TRACE_ID, "s", SpanKind.SERVER, {}, []).decision).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
  });

  it("refuses an unknown sampler or a ratio outside 0–1 with the variable named", () => {
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: "sometimes" }, true)).toThrow(
      /OTEL_TRACES_SAMPLER=sometimes/,
    );
    expect(() =>
      samplerFromEnv({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, true),
    ).toThrow(/OTEL_TRACES_SAMPLER_ARG=2/);
  });
});
