/**
 * `npm run trace-report`: where requests spent their time, read from traces.
 *
 *   npm run trace-report -- --last 5m
 *   npm run trace-report -- --bench bench-out/result.json [--mode pull] [--step 60]
 *   npm run trace-report -- --from 2026-12-06T10:00:00Z --to 2026-12-06T10:05:00Z \
 *     --compare-from 2026-12-06T09:00:00Z --compare-to 2026-12-06T09:05:00Z
 *   npm run trace-report -- --file traces.json --from -1h --json --svg phases.svg
 *
 * Reads the request traces (rooted at ingress) that started in the window from the trace
 * backend's query API (`--jaeger`, the one `npm run traces` starts by default) or an OTLP/JSON
 * file, and prints per-phase and per-model percentiles, the dominant phase, the slowest
 * requests with their time lines, and how queue wait relates to batch size and residency.
 * With a second window (`--compare-*`, or `--baseline` a report saved with `--json`) it prints
 * what changed instead. Exit status: 0, 1 when the backend could not be read, 2 for bad
 * arguments.
 */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { JaegerQueryError } from "@shoal/traces";
import { compareReports } from "./compare.js";
import { renderComparison, renderText } from "./render-text.js";
import { phaseChart } from "./render-svg.js";
import { buildReport, type Report } from "./report.js";
import { requestOf } from "./request.js";
import { readTraces, type TraceSource } from "./source.js";
import { benchWindow, parseTime, WindowError, type Window } from "./window.js";

const usage =
  "usage: npm run trace-report -- [--last 15m | --from T --to T | --bench result.json [--mode M] [--step RPS]] " +
  "[--jaeger URL | --file traces.json] [--limit N] [--slowest N] [--json] [--svg out.svg] " +
  "[--compare-from T --compare-to T | --compare-bench result.json [--compare-step RPS] | --baseline report.json]";

interface Args {
  readonly [key: string]: string | boolean | undefined;
}

async function windowOf(args: Args, prefix: "" | "compare-"): Promise<Window | undefined> {
  const now = new Date();
  const bench = args[`${prefix}bench`];
  if (typeof bench === "string") {
    const step = args[`${prefix}step`];
    return benchWindow(
      bench,
      typeof args.mode === "string" ? args.mode : undefined,
      typeof step === "string" ? Number(step) : undefined,
    );
  }
  const from = args[`${prefix}from`];
  const to = args[`${prefix}to`];
  if (typeof from === "string") {
    return { from: parseTime(from, now), to: parseTime(typeof to === "string" ? to : "now", now) };
  }
  if (prefix === "compare-") return undefined;
  const last = typeof args.last === "string" ? args.last : "15m";
  return { from: parseTime(`-${last}`, now), to: now };
}

async function report(args: Args, source: TraceSource, window: Window): Promise<Report> {
  const traces = await readTraces(source, window);
  const requests = traces.flatMap((t) => requestOf(t) ?? []);
  return buildReport(requests, window, Number(args.slowest ?? 5));
}

async function main(): Promise<number> {
  let values: Args;
  try {
    ({ values } = parseArgs({
      options: {
        last: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
        bench: { type: "string" },
        mode: { type: "string" },
        step: { type: "string" },
        jaeger: { type: "string" },
        file: { type: "string" },
        limit: { type: "string", default: "2000" },
        slowest: { type: "string", default: "5" },
        json: { type: "boolean", default: false },
        svg: { type: "string" },
        "compare-from": { type: "string" },
        "compare-to": { type: "string" },
        "compare-bench": { type: "string" },
        "compare-step": { type: "string" },
        baseline: { type: "string" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  if (values.help === true) {
    console.log(usage);
    return 0;
  }
  const limit = Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1 || !/^\d+$/.test(String(values.slowest))) {
    console.error(`--limit and --slowest take whole numbers\n${usage}`);
    return 2;
  }
  const source: TraceSource =
    typeof values.file === "string"
      ? { kind: "file", path: values.file }
      : {
          kind: "jaeger",
          url:
            typeof values.jaeger === "string"
              ? values.jaeger
              : `http://127.0.0.1:${process.env["SHOAL_TRACES_QUERY_PORT"] ?? "16686"}`,
          limit,
        };
  let window: Window | undefined;
  let before: Window | undefined;
  try {
    window = await windowOf(values, "");
    before = await windowOf(values, "compare-");
  } catch (err) {
    if (!(err instanceof WindowError)) throw err;
    console.error(`${err.message}\n${usage}`);
    return 2;
  }
  if (window === undefined) return 2;
  try {
    const current = await report(values, source, window);
    const baseline =
      before !== undefined
        ? await report(values, source, before)
        : typeof values.baseline === "string"
          ? (JSON.parse(await readFile(values.baseline, "utf8")) as Report)
          : undefined;
    if (typeof values.svg === "string") await writeFile(values.svg, phaseChart(current));
    if (baseline !== undefined) {
      const comparison = compareReports(baseline, current);
      process.stdout.write(
        values.json === true
          ? JSON.stringify(comparison, null, 2) + "\n"
          : renderComparison(comparison),
      );
    } else {
      process.stdout.write(
        values.json === true ? JSON.stringify(current, null, 2) + "\n" : renderText(current),
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof JaegerQueryError) {
      console.error(`${err.message}\nIs the trace backend running (npm run traces)?`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main();
