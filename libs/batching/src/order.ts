import type { BatchCandidate } from "./candidate.js";

/**
 * The order in which candidates are offered to a batch: priority descending, then deadline
 * ascending with "no deadline" (`0`) last, then arrival ascending.
 *
 * Deadline before arrival means that among equally important work the item closest to expiring
 * goes first (earliest-deadline-first minimises misses); arrival last keeps the rest FIFO and
 * makes the order total for distinct arrivals.
 *
 * Usable directly with `Array.prototype.sort`.
 */
export function compareCandidates(a: BatchCandidate, b: BatchCandidate): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const da = effectiveDeadline(a.deadlineUnixMs);
  const db = effectiveDeadline(b.deadlineUnixMs);
  if (da !== db) return da < db ? -1 : 1;
  return a.arrival - b.arrival;
}

function effectiveDeadline(deadlineUnixMs: number): number {
  return deadlineUnixMs === 0 ? Number.POSITIVE_INFINITY : deadlineUnixMs;
}
