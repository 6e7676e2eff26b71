import { setMaxListeners } from "node:events";
import type { PlannedRequest } from "./plan.js";
import { percentiles, type StepResult } from "./step-result.js";

/** Sends one planned request and resolves once its whole answer is in. */
export type Send = (request: PlannedRequest, signal: AbortSignal) => Promise<SentAnswer>;

export interface SentAnswer {
  /** Tokens the request is credited with: its input tokens, or generated tokens. */
  readonly tokens: number;
  /** Where the server says the request's time went (its `Server-Timing`), ms by phase. */
  readonly phasesMs?: Readonly<Record<string, number>>;
}

/** What a running step reports about once a second. */
export interface StepProgress {
  readonly offeredRps: number;
  readonly elapsedS: number;
  readonly sent: number;
  readonly answered: number;
  readonly failed: number;
  readonly inFlight: number;
}

export interface RunStepOptions {
  readonly offeredRps: number;
  readonly plan: readonly PlannedRequest[];
  /** Length of the step the plan covers, s. */
  readonly seconds: number;
  /** Requests sent before this time into the step are not measured, s. */
  readonly warmupSeconds: number;
  /** A request still unanswered this long after the step's end is aborted and failed, ms. */
  readonly drainMs: number;
  readonly send: Send;
  readonly onProgress?: (p: StepProgress) => void;
  readonly now?: () => number;
}

/**
 * Runs one load step open-loop: every request is sent at its planned time whether or not
 * earlier ones were answered, so a cluster that falls behind shows it as queueing latency
 * instead of slowing the load down (what closed-loop clients would do, hiding the knee).
 *
 * Measured are the requests sent after the warm-up: their latency (send to last byte) and
 * failures. Achieved throughput counts answers that arrived within the measured window, so a
 * backlog that drains after the step does not count as capacity.
 */
export async function runStep(options: RunStepOptions): Promise<StepResult> {
  const now = options.now ?? ((): number => performance.now());
  const abort = new AbortController();
  // Every request in flight listens on this one signal; past a knee thousands may be.
  setMaxListeners(0, abort.signal);
  const started = now();
  const windowStart = started + options.warmupSeconds * 1000;
  const windowEnd = started + options.seconds * 1000;
  const latencies: number[] = [];
  const bySecond: number[][] = [];
  const phases = new Map<string, number[]>();
  let answeredInWindow = 0;
  let tokensInWindow = 0;
  let sent = 0;
  let measuredSent = 0;
  let answered = 0;
  let failed = 0;
  let measuredFailed = 0;
  const inFlight = new Set<Promise<void>>();
  const progress = setInterval(() => {
    options.onProgress?.({
      offeredRps: options.offeredRps,
      elapsedS: (now() - started) / 1000,
      sent,
      answered,
      failed,
      inFlight: inFlight.size,
    });
  }, 1000);
  try {
    for (const request of options.plan) {
      const wait = started + request.atMs - now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const t0 = now();
      const measured = t0 >= windowStart;
      sent++;
      if (measured) measuredSent++;
      const call = options.send(request, abort.signal).then(
        (answer) => {
          const t1 = now();
          answered++;
          if (measured) {
            latencies.push(t1 - t0);
            const second = Math.floor((t0 - started) / 1000);
            (bySecond[second] ??= []).push(t1 - t0);
            for (const [phase, ms] of Object.entries(answer.phasesMs ?? {})) {
              const list = phases.get(phase) ?? [];
              list.push(ms);
              phases.set(phase, list);
            }
          }
          if (t1 >= windowStart && t1 <= windowEnd) {
            answeredInWindow++;
            tokensInWindow += answer.tokens;
          }
        },
        () => {
          failed++;
          if (measured) measuredFailed++;
        },
      );
      const tracked = call.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    }
    const drain = setTimeout(
      () => {
        abort.abort(new Error("unanswered at the end of the step's drain time"));
      },
      Math.max(0, windowEnd - now()) + options.drainMs,
    );
    await Promise.all(inFlight);
    clearTimeout(drain);
  } finally {
    clearInterval(progress);
  }
  const windowS = (windowEnd - windowStart) / 1000;
  return {
    offeredRps: options.offeredRps,
    sent: measuredSent,
    sentRps: measuredSent / windowS,
    achievedRps: answeredInWindow / windowS,
    achievedTokensPerS: tokensInWindow / windowS,
    failed: measuredFailed,
    latencyMs: percentiles(latencies),
    p99BySecondMs: Array.from({ length: Math.ceil(options.seconds) }, (_, i) => {
      const ms = bySecond[i];
      return ms === undefined ? null : percentiles(ms).p99;
    }),
    ...(phases.size === 0
      ? {}
      : {
          phasesMs: Object.fromEntries([...phases].map(([name, ms]) => [name, percentiles(ms)])),
        }),
  };
}
