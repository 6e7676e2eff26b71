/** One finished request of the steady load (a line of its output). */
export interface LoadRecord {
  /** Order in which requests started; every number from 0 up is one request. */
  readonly seq: number;
  readonly startMs: number;
  readonly endMs: number;
  /** HTTP status; 0 when no answer came (timeout, or no ingress could be reached). */
  readonly status: number;
  /** Deliveries tried: more than one when an ingress refused or reset the connection first. */
  readonly attempts: number;
  /** Cosine similarity to the reference vector of the same text, for answers. */
  readonly cosine?: number;
  readonly error?: string;
}

/** What happened to the requests started in one window of time. */
export interface WindowSummary {
  readonly requests: number;
  readonly answered: number;
  /** Answers with another vector than their text's reference: a crossed or corrupted answer. */
  readonly wrongAnswers: number;
  /** Requests that got an error or no answer, with what they got. */
  readonly failed: readonly { seq: number; status: number; error: string }[];
  /** Request numbers seen more than once: an answer delivered twice. */
  readonly duplicates: number;
  /** Requests redelivered to another ingress after a refused or reset connection. */
  readonly redelivered: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Sums up the records of requests that started in `[fromMs, toMs)`. `records` must hold every
 * request the load started, so a missing number is a request never answered: it counts as
 * failed.
 */
export function summarize(
  records: readonly LoadRecord[],
  fromMs: number,
  toMs: number,
): WindowSummary {
  const inWindow = records.filter((r) => r.startMs >= fromMs && r.startMs < toMs);
  const seen = new Map<number, number>();
  for (const r of records) seen.set(r.seq, (seen.get(r.seq) ?? 0) + 1);
  const failed = inWindow
    .filter((r) => r.status !== 200)
    .map((r) => ({ seq: r.seq, status: r.status, error: r.error ?? "" }));
  const seqs = inWindow.map((r) => r.seq);
  if (seqs.length > 0) {
    const lo = Math.min(...seqs);
    const hi = Math.max(...seqs);
    for (let seq = lo; seq <= hi; seq++) {
      if (!seen.has(seq)) failed.push({ seq, status: 0, error: "never answered" });
    }
  }
  const latencies = inWindow.map((r) => r.endMs - r.startMs).sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies.length === 0
      ? 0
      : (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return {
    requests: inWindow.length,
    answered: inWindow.filter((r) => r.status === 200).length,
    wrongAnswers: inWindow.filter((r) => r.status === 200 && (r.cosine ?? 0) < 0.999).length,
    failed,
    duplicates: [...seen.values()].filter((n) => n > 1).length,
    redelivered: inWindow.filter((r) => r.attempts > 1).length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: latencies.at(-1) ?? 0,
  };
}

/**
 * Milliseconds from `faultMs` until answers flow again: until the first request started at or
 * after the fault is answered. While the cluster recovers, requests wait rather than fail, so
 * this is the pause a client sees.
 */
export function recoveryMs(records: readonly LoadRecord[], faultMs: number): number | undefined {
  const after = records
    .filter((r) => r.startMs >= faultMs && r.status === 200)
    .sort((a, b) => a.endMs - b.endMs);
  const first = after[0];
  return first === undefined ? undefined : first.endMs - faultMs;
}
