/**
 * The cluster-overhead bench: what Shoal's own request path costs, with compute at zero.
 *
 * One cluster (./cluster.ts) takes single-input embeddings over REST, gRPC and MessagePack in
 * turn, from the compiled open-loop generator (tools/openloop), step by step up the rates until
 * two steps past the knee. For every step it charges each cluster process the CPU it used
 * (from `/proc`, less what it uses idle) per answered request, and reports the generator's own
 * CPU and send lag beside them, so a reader can see the generator was not the limit.
 */
import { writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";
import { findKnee, kneeMiss, type StepResult } from "@shoal/loadgen";
import { encodeBodies, ROUTES, type Protocol } from "./bodies.js";
import { OVERHEAD_MODEL, startOverheadCluster, type OverheadCluster } from "./cluster.js";
import { startObservers } from "./observers.js";
import { openloop, type GeneratorStep } from "./openloop.js";
import { DEFAULT_TRACE_RATIO } from "@shoal/telemetry";
import { cpuUs } from "./proc-cpu.js";

export interface OverheadOptions {
  readonly out: string;
  readonly protocols: readonly Protocol[];
  /** Offered rates, ascending, req/s. */
  readonly rates: readonly number[];
  readonly stepSeconds: number;
  readonly warmupSeconds: number;
  readonly sloP99Ms: number;
  /** Tokens per input (one input per request). */
  readonly tokens: number;
  /** The rate whose CPU figures compare runs at equal load, whatever their knees. */
  readonly referenceRps: number;
  /** Ingress processes sharing the port (`SHOAL_INGRESS_PROCESSES`). */
  readonly ingressProcesses: number;
  /**
   * Run the cluster as it is watched in production: ingress and the worker serve metrics,
   * scraped every `scrapeIntervalMs`, and every process exports its spans over OTLP at the
   * default sampling.
   */
  readonly observed: boolean;
  readonly scrapeIntervalMs: number;
}

export const OVERHEAD_DEFAULTS = {
  rates: [
    100, 200, 300, 400, 500, 600, 800, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 7000,
    8000,
  ],
  stepSeconds: 8,
  warmupSeconds: 2,
  sloP99Ms: 100,
  tokens: 10,
  referenceRps: 200,
  ingressProcesses: 1,
  observed: false,
  scrapeIntervalMs: 5_000,
} as const;

interface OverheadStep extends GeneratorStep {
  /** CPU µs per answered request by cluster process, idle use subtracted; `total` sums them. */
  readonly cpu_us_per_request: Record<string, number>;
  /** The generator's own CPU µs per answered request. */
  readonly generator_cpu_us_per_request: number;
}

export async function benchOverhead(options: OverheadOptions): Promise<void> {
  const observers = options.observed ? await startObservers() : undefined;
  const cluster = await startOverheadCluster({
    ingressProcesses: options.ingressProcesses,
    serviceEnv:
      observers === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: observers.otlpEndpoint },
    metrics: options.observed,
  });
  observers?.scrape(cluster.metricsPorts, options.scrapeIntervalMs);
  try {
    const idle = await idleRates(cluster);
    const results: Record<string, unknown> = {};
    for (const protocol of options.protocols) {
      results[protocol] = await sweepProtocol(cluster, protocol, idle, options);
    }
    const result = {
      scenario: "overhead",
      model: OVERHEAD_MODEL,
      tokens_per_input: options.tokens,
      slo_p99_ms: options.sloP99Ms,
      step_seconds: options.stepSeconds,
      warmup_seconds: options.warmupSeconds,
      reference_rps: options.referenceRps,
      ingress_processes: options.ingressProcesses,
      observed:
        observers === undefined
          ? false
          : {
              scrape_interval_ms: options.scrapeIntervalMs,
              // The services' sampler, from the environment they inherit; unset, Shoal's own.
              sampler:
                process.env["OTEL_TRACES_SAMPLER"] ??
                `parentbased_traceidratio ${DEFAULT_TRACE_RATIO} (Shoal's default)`,
              sampler_arg: process.env["OTEL_TRACES_SAMPLER_ARG"] ?? null,
              scrapes: observers.scrapes(),
              span_exports: observers.exports(),
            },
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
      generator: "tools/openloop (Go, compiled), one process",
      idle_cpu_us_per_s: idle,
      protocols: results,
    };
    await writeFile(join(options.out, "result.json"), JSON.stringify(result, null, 2) + "\n");
    console.error(`[bench] wrote ${join(options.out, "result.json")}`);
  } finally {
    await cluster.stop();
    await observers?.close();
  }
}

/** CPU µs per second each process uses with no load, measured over a few seconds. */
async function idleRates(cluster: OverheadCluster): Promise<Record<string, number>> {
  const seconds = 5;
  const before = await cpuUs(cluster.pids);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const after = await cpuUs(cluster.pids);
  return Object.fromEntries(
    Object.keys(cluster.pids).map((name) => [
      name,
      ((after[name] ?? 0) - (before[name] ?? 0)) / seconds,
    ]),
  );
}

async function sweepProtocol(
  cluster: OverheadCluster,
  protocol: Protocol,
  idle: Readonly<Record<string, number>>,
  options: OverheadOptions,
): Promise<unknown> {
  const bodiesPath = join(options.out, `${protocol}.bodies`);
  await writeFile(bodiesPath, encodeBodies(protocol, OVERHEAD_MODEL, 1000, options.tokens));
  const steps: OverheadStep[] = [];
  const asStep = (s: OverheadStep): StepResult => ({
    offeredRps: s.offered_rps,
    sent: s.sent,
    sentRps: s.sent_rps,
    achievedRps: s.achieved_rps,
    achievedTokensPerS: s.achieved_rps * options.tokens,
    failed: s.failed,
    latencyMs: s.latency_ms,
  });
  let misses = 0;
  for (const rate of options.rates) {
    const step = await runStep(cluster, protocol, bodiesPath, rate, idle, options);
    steps.push(step);
    console.error(
      `[bench] overhead ${protocol} ${rate} req/s: achieved ${step.achieved_rps.toFixed(0)}, ` +
        `p99 ${step.latency_ms.p99.toFixed(1)} ms, failed ${step.failed}, ` +
        `cluster ${step.cpu_us_per_request["total"]?.toFixed(0)} µs/request, ` +
        `generator ${step.generator_cpu_us_per_request.toFixed(0)} µs/request, ` +
        `send lag p99 ${step.send_lag_ms.p99.toFixed(1)} ms` +
        (step.first_error === undefined ? "" : ` (first error: ${step.first_error})`),
    );
    misses = kneeMiss(asStep(step), { sloP99Ms: options.sloP99Ms }) === undefined ? 0 : misses + 1;
    if (misses >= 2) break;
    // Let the queue drain and the processes settle before the next rate.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const knee = findKnee(steps.map(asStep), { sloP99Ms: options.sloP99Ms });
  const at = knee.index >= 0 ? steps[knee.index] : undefined;
  const reference = steps.find((s) => s.offered_rps === options.referenceRps);
  return {
    knee_rps: at?.achieved_rps ?? 0,
    knee_offered_rps: at?.offered_rps ?? 0,
    p99_ms_at_knee: at?.latency_ms.p99 ?? null,
    cpu_us_per_request_at_knee: at?.cpu_us_per_request ?? null,
    generator_cpu_us_per_request_at_knee: at?.generator_cpu_us_per_request ?? null,
    cpu_us_per_request_at_reference: reference?.cpu_us_per_request ?? null,
    first_miss:
      knee.firstMiss === undefined
        ? null
        : {
            offered_rps: steps[knee.firstMiss.index]?.offered_rps,
            reason: knee.firstMiss.reason,
          },
    steps,
  };
}

async function runStep(
  cluster: OverheadCluster,
  protocol: Protocol,
  bodiesPath: string,
  rate: number,
  idle: Readonly<Record<string, number>>,
  options: OverheadOptions,
): Promise<OverheadStep> {
  const route = ROUTES[protocol];
  const before = await cpuUs(cluster.pids);
  const started = performance.now();
  const generated = await openloop([
    `-protocol=${route.protocol}`,
    `-url=${cluster.baseUrl}`,
    `-path=${route.path}`,
    `-content-type=${route.contentType}`,
    `-conns=${route.conns}`,
    `-bodies=${bodiesPath}`,
    `-rate=${rate}`,
    `-seconds=${options.stepSeconds}`,
    `-warmup=${options.warmupSeconds}`,
    "-timeout=10s",
  ]);
  const elapsedS = (performance.now() - started) / 1000;
  const after = await cpuUs(cluster.pids);
  const answered = Math.max(1, generated.total_answered);
  const perRequest: Record<string, number> = {};
  let total = 0;
  for (const name of Object.keys(cluster.pids)) {
    const used = (after[name] ?? 0) - (before[name] ?? 0) - (idle[name] ?? 0) * elapsedS;
    const us = Math.max(0, used) / answered;
    perRequest[name] = us;
    total += us;
  }
  perRequest["total"] = total;
  return {
    ...generated,
    cpu_us_per_request: perRequest,
    generator_cpu_us_per_request: generated.total_cpu_us / answered,
  };
}
