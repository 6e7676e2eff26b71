import { join } from "node:path";
import { repoRoot } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import {
  exportedMetricNames,
  metricNamesIn,
  monitoringExpressions,
  unexportedReferences,
} from "./monitoring-metrics.js";

describe("metricNamesIn", () => {
  it("finds the series of an expression, not its functions, labels, keywords or ranges", () => {
    expect(
      metricNamesIn(
        'sum by (model) (rate(a_total{outcome!="ok", model=~"$model"}[$__rate_interval])) / on (model) group_left sum by (model) (rate(b_total[5m])) > 0.05 and c_seconds offset 5m',
      ),
    ).toEqual(["a_total", "b_total", "c_seconds"]);
    expect(
      metricNamesIn("histogram_quantile(0.99, sum by (le, route) (rate(d_seconds_bucket[1m])))"),
    ).toEqual(["d_seconds_bucket"]);
    expect(metricNamesIn('up{job=~"shoal-.*"} == 0')).toEqual(["up"]);
  });
});

describe("exportedMetricNames", () => {
  it("reads TYPE lines and adds the series histograms and summaries expose", () => {
    const names = exportedMetricNames(
      [
        "# HELP a_total A.",
        "# TYPE a_total counter",
        "# TYPE h_seconds histogram",
        "# TYPE s summary",
        'a_total{x="y"} 3',
      ].join("\n"),
    );
    expect([...names].sort()).toEqual(
      [
        "a_total",
        "h_seconds",
        "h_seconds_bucket",
        "h_seconds_count",
        "h_seconds_sum",
        "s",
        "s_count",
        "s_sum",
      ].sort(),
    );
  });
});

describe("the committed dashboards and alert rules", () => {
  it("hold expressions in every rule, panel and variable, each reading some metric", async () => {
    const expressions = await monitoringExpressions(join(repoRoot(), "deploy"));
    expect(expressions.filter((e) => e.where.includes("alerts.yml")).length).toBeGreaterThan(5);
    for (const file of ["fleet", "model", "accelerator", "generation"]) {
      expect(expressions.some((e) => e.where.startsWith(`shoal-${file}.json`))).toBe(true);
    }
    for (const e of expressions) expect(metricNamesIn(e.expr), e.where).not.toEqual([]);
  });

  it("name what is missing when an expression reads an unexported metric", () => {
    expect(
      unexportedReferences(
        [
          { where: "a", expr: "rate(x_total[1m])" },
          { where: "b", expr: "up == 0" },
        ],
        new Set(["y_total"]),
      ),
    ).toEqual([{ where: "a", missing: ["x_total"] }]);
  });
});
