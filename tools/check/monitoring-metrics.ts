/**
 * Whether the dashboards and alert rules in `deploy/` read metrics the services export: the
 * PromQL expressions are collected (alert rules' `expr` lines, dashboard targets and variable
 * queries) and their metric names compared with a scrape's `# TYPE` lines.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Prometheus's own series, present for every scrape target. */
const PROMETHEUS_SERIES = new Set(["up"]);

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);

/**
 * The series names a Prometheus text exposition declares: each `# TYPE` line's name, with the
 * `_bucket`, `_sum` and `_count` series of histograms and summaries.
 */
export function exportedMetricNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = "", type] = match;
    names.add(name);
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(name + s);
    if (type === "summary") for (const s of ["_sum", "_count"]) names.add(name + s);
  }
  return names;
}

/** The metric names a PromQL expression reads. */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "");
  const names: string[] = [];
  // Not the unit of a number (`offset 5m`, `1e3`).
  for (const match of bare.matchAll(/(?<![\w.:])[a-zA-Z_:][\w:]*/g)) {
    const name = match[0];
    const after = bare.slice(match.index + name.length).trimStart();
    if (after.startsWith("(") || KEYWORDS.has(name.toLowerCase())) continue;
    names.push(name);
  }
  return names;
}

export interface MonitoringExpression {
  /** File and place, for the message of a failed check. */
  readonly where: string;
  readonly expr: string;
}

interface Dashboard {
  panels?: { title?: string; targets?: { expr?: string }[] }[];
  templating?: { list?: { name?: string; query?: string | { query?: string } }[] };
}

/** Every PromQL expression of the alert rules and dashboards under `deployDir`. */
export async function monitoringExpressions(deployDir: string): Promise<MonitoringExpression[]> {
  const out: MonitoringExpression[] = [];
  const rulesFile = join(deployDir, "prometheus", "alerts.yml");
  // Rules keep each `expr` on one line (the file says so), so no YAML parser is needed here.
  for (const [i, line] of (await readFile(rulesFile, "utf8")).split("\n").entries()) {
    const match = /^\s*expr:\s*(.+)$/.exec(line);
    if (match?.[1] !== undefined) out.push({ where: `${rulesFile}:${i + 1}`, expr: match[1] });
  }
  const dashboards = join(deployDir, "grafana");
  for (const file of (await readdir(dashboards)).filter((f) => f.endsWith(".json"))) {
    const dashboard = JSON.parse(await readFile(join(dashboards, file), "utf8")) as Dashboard;
    for (const panel of dashboard.panels ?? []) {
      for (const target of panel.targets ?? []) {
        if (target.expr !== undefined) {
          out.push({ where: `${file}: ${panel.title ?? "untitled"}`, expr: target.expr });
        }
      }
    }
    for (const variable of dashboard.templating?.list ?? []) {
      const query = typeof variable.query === "string" ? variable.query : variable.query?.query;
      // `label_values(metric, label)`: the metric is read, the label is not a series.
      const metric = query === undefined ? undefined : /^label_values\(([^,)]+)/.exec(query)?.[1];
      if (metric !== undefined) {
        out.push({ where: `${file}: variable ${variable.name ?? ""}`, expr: metric.trim() });
      }
    }
  }
  return out;
}

/** Expressions reading a metric outside `exported`, each with the names it lacks. */
export function unexportedReferences(
  expressions: readonly MonitoringExpression[],
  exported: ReadonlySet<string>,
): { where: string; missing: string[] }[] {
  return expressions
    .map(({ where, expr }) => ({
      where,
      missing: metricNamesIn(expr).filter((n) => !exported.has(n) && !PROMETHEUS_SERIES.has(n)),
    }))
    .filter((r) => r.missing.length > 0);
}
