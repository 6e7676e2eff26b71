import type { Timings, WorkResult } from "@shoal/proto";
import type { RequestError } from "./errors.js";

/** A part's answer that is not an error: embeddings, scores, labels or entities. */
export type PartOutcome = Extract<
  WorkResult["outcome"],
  { case: "embed" | "score" | "classify" | "extract" }
>;

/** What one finished request carried back from its parts, in part order. */
export interface Assembled {
  readonly outcomes: readonly PartOutcome[];
  readonly timings: readonly (Timings | undefined)[];
}

/** A held request: its eventual answer, and the moment its part count becomes known. */
export interface Held {
  readonly answer: Promise<Assembled>;
  /** Sets how many parts the request was queued as; answers may already have arrived. */
  expect(parts: number): void;
}

interface Entry {
  readonly received: Map<number, { outcome: PartOutcome; timings: Timings | undefined }>;
  parts: number | undefined;
  readonly resolve: (value: Assembled) => void;
  readonly reject: (error: RequestError) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * Requests this ingress holds, keyed by request id, each answered exactly once. A request is
 * held before it is queued, because a fast worker can answer before the queueing call returns.
 * Delivery is at-least-once, so a part may be answered twice (a worker died after publishing
 * but before acking); the first answer wins and later ones are counted and dropped.
 */
export class PendingRequests {
  readonly #entries = new Map<string, Entry>();
  #duplicates = 0;

  get size(): number {
    return this.#entries.size;
  }

  /** Answers that arrived for a part already answered, or for a request no longer held. */
  get duplicates(): number {
    return this.#duplicates;
  }

  /** Holds `requestId` until every part answered or `timeoutMs` passed (then `onTimeout`). */
  hold(requestId: string, timeoutMs: number, onTimeout: () => RequestError): Held {
    let entry: Entry | undefined;
    const answer = new Promise<Assembled>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail(requestId, onTimeout());
      }, timeoutMs);
      entry = { received: new Map(), parts: undefined, resolve, reject, timer };
      this.#entries.set(requestId, entry);
    });
    // The deadline can fire while the request is still being queued, before the caller awaits
    // the answer; that rejection is the caller's to see, not an unhandled one that would take
    // the process down.
    answer.catch(() => undefined);
    return {
      answer,
      expect: (parts) => {
        if (entry === undefined || this.#entries.get(requestId) !== entry) return;
        entry.parts = parts;
        this.#completeIfDone(requestId, entry);
      },
    };
  }

  /** Records one part's answer; true when it was the first answer for that part. */
  settle(result: WorkResult, toError: (result: WorkResult) => RequestError | undefined): boolean {
    const entry = this.#entries.get(result.requestId);
    const beyond = entry?.parts !== undefined && result.part >= entry.parts;
    if (entry === undefined || beyond || entry.received.has(result.part)) {
      this.#duplicates++;
      return false;
    }
    const error = toError(result);
    const outcome = result.outcome;
    if (error !== undefined || outcome.case === "error" || outcome.case === undefined) {
      if (error !== undefined) this.#fail(result.requestId, error);
      return error !== undefined;
    }
    entry.received.set(result.part, { outcome, timings: result.timings });
    this.#completeIfDone(result.requestId, entry);
    return true;
  }

  /** Ends a held request with an error (no-op when it already ended). */
  fail(requestId: string, error: RequestError): void {
    this.#fail(requestId, error);
  }

  /** Ends every held request, e.g. on shutdown. */
  failAll(error: () => RequestError): void {
    for (const id of [...this.#entries.keys()]) this.#fail(id, error());
  }

  #completeIfDone(requestId: string, entry: Entry): void {
    if (entry.parts === undefined || entry.received.size < entry.parts) return;
    clearTimeout(entry.timer);
    this.#entries.delete(requestId);
    const ordered = [...entry.received.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
    const outcomes = ordered.map((v) => v.outcome);
    entry.resolve({
      outcomes,
      timings: ordered.map((v) => v.timings),
    });
  }

  #fail(requestId: string, error: RequestError): void {
    const entry = this.#entries.get(requestId);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.#entries.delete(requestId);
    entry.reject(error);
  }
}
