import type { Comparison } from "./compare.js";
import { PHASES } from "./phases.js";
import type { GroupSummary, Report, WaitRow } from "./report.js";

const pct = (share: number): string => `${(share * 100).toFixed(1)} %`;
const num = (ms: number): string => ms.toFixed(ms >= 100 ? 0 : ms >= 10 ? 1 : 2);

function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

function phaseTable(g: GroupSummary): string[] {
  return table([
    ["phase", "share", "p50 ms", "p90 ms", "p99 ms", "max ms"],
    ...PHASES.map((p) => {
      const s = g.phases[p];
      return [p, pct(s.share), num(s.p50), num(s.p90), num(s.p99), num(s.max)];
    }),
    ["total", "", num(g.totalMs.p50), num(g.totalMs.p90), num(g.totalMs.p99), num(g.totalMs.max)],
  ]);
}

function waitTable(title: string, rows: readonly WaitRow[]): string[] {
  if (rows.length === 0) return [];
  return [
    "",
    title,
    ...table([
      ["", "requests", "queue p50 ms", "queue p99 ms", "compute p50 ms"],
      ...rows.map((r) => [
        r.label,
        String(r.requests),
        num(r.queueP50Ms),
        num(r.queueP99Ms),
        num(r.computeP50Ms),
      ]),
    ]).map((l) => `  ${l}`),
  ];
}

/** The report as text for a terminal. */
export function renderText(report: Report): string {
  const { all } = report;
  if (all.requests === 0) {
    return `No request traces between ${report.window.from} and ${report.window.to}.\n`;
  }
  const lines = [
    `Requests ${report.window.from} – ${report.window.to}: ${all.requests} traced, ${all.errors} with errors`,
    `Dominant phase: ${all.dominant} (${pct(all.phases[all.dominant].share)} of all request time)`,
    "",
    ...phaseTable(all),
    "",
    "Per model",
    ...table([
      ["model", "requests", "p50 ms", "p99 ms", "dominant"],
      ...Object.entries(report.models).map(([model, g]) => [
        model,
        String(g.requests),
        num(g.totalMs.p50),
        num(g.totalMs.p99),
        `${g.dominant} (${pct(g.phases[g.dominant].share)})`,
      ]),
    ]).map((l) => `  ${l}`),
    "",
    "Slowest requests (their time line: the span each moment waited on)",
  ];
  report.slowest.forEach((s, i) => {
    lines.push(`  ${i + 1}. ${num(s.totalMs)} ms  ${s.route}  ${s.model}  trace ${s.traceId}`);
    lines.push(
      `     ${s.path
        .filter((p) => p.ms >= 0.01)
        .map((p) => `${p.phase} ${num(p.ms)} ms (${p.span})`)
        .join(" → ")}`,
    );
  });
  lines.push(
    ...waitTable(
      "Queue wait by batch size (queue includes model loads waited for)",
      report.queueByBatchSize,
    ),
  );
  lines.push(...waitTable("Queue wait and residency", report.queueByResidency));
  return lines.join("\n") + "\n";
}

/** A comparison of two windows as text. */
export function renderComparison(c: Comparison): string {
  const arrow = (a: number, b: number): string =>
    a > 0 ? `${(b / a).toFixed(2)}×` : b > 0 ? "new" : "–";
  return (
    [
      `Before: ${c.before.from} – ${c.before.to}, ${c.requests.before} requests`,
      `After:  ${c.after.from} – ${c.after.to}, ${c.requests.after} requests`,
      `Total p50 ${num(c.totalMs.before.p50)} → ${num(c.totalMs.after.p50)} ms, p99 ${num(c.totalMs.before.p99)} → ${num(c.totalMs.after.p99)} ms`,
      `Biggest change: ${c.biggestChange.phase}, ${c.biggestChange.meanMsDelta >= 0 ? "+" : ""}${num(c.biggestChange.meanMsDelta)} ms per request on average`,
      "",
      ...table([
        [
          "phase",
          "share before",
          "share after",
          "p50 before",
          "p50 after",
          "p99 before",
          "p99 after",
          "p99 ratio",
        ],
        ...c.phases.map((p) => [
          p.phase,
          pct(p.before.share),
          pct(p.after.share),
          num(p.before.p50),
          num(p.after.p50),
          num(p.before.p99),
          num(p.after.p99),
          arrow(p.before.p99, p.after.p99),
        ]),
      ]),
    ].join("\n") + "\n"
  );
}
