import { PHASES, type Phase } from "./phases.js";
import type { GroupSummary, Report } from "./report.js";

/** One phase in two windows. */
export interface PhaseChange {
  readonly phase: Phase;
  readonly before: { readonly p50: number; readonly p99: number; readonly share: number };
  readonly after: { readonly p50: number; readonly p99: number; readonly share: number };
}

export interface Comparison {
  readonly before: Report["window"];
  readonly after: Report["window"];
  readonly requests: { readonly before: number; readonly after: number };
  readonly totalMs: {
    readonly before: { readonly p50: number; readonly p99: number };
    readonly after: { readonly p50: number; readonly p99: number };
  };
  readonly phases: readonly PhaseChange[];
  /**
   * The phase whose mean time per request grew the most (shrank, when everything got
   * faster): the first answer to "what changed".
   */
  readonly biggestChange: { readonly phase: Phase; readonly meanMsDelta: number };
}

/** What changed between two windows' reports. */
export function compareReports(before: Report, after: Report): Comparison {
  const phases = PHASES.map((phase) => ({
    phase,
    before: pick(before.all, phase),
    after: pick(after.all, phase),
  }));
  const deltas = PHASES.map((phase) => ({
    phase,
    meanMsDelta: round(after.all.phases[phase].mean - before.all.phases[phase].mean),
  }));
  const biggestChange = deltas.reduce((best, d) =>
    Math.abs(d.meanMsDelta) > Math.abs(best.meanMsDelta) ? d : best,
  );
  return {
    before: before.window,
    after: after.window,
    requests: { before: before.all.requests, after: after.all.requests },
    totalMs: {
      before: { p50: before.all.totalMs.p50, p99: before.all.totalMs.p99 },
      after: { p50: after.all.totalMs.p50, p99: after.all.totalMs.p99 },
    },
    phases,
    biggestChange,
  };
}

function pick(g: GroupSummary, phase: Phase) {
  const s = g.phases[phase];
  return { p50: s.p50, p99: s.p99, share: s.share };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
