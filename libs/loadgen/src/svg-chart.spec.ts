import { describe, expect, it } from "vitest";
import { lineChart, ticks } from "./svg-chart.js";

describe("ticks", () => {
  it("takes round steps from zero past the maximum", () => {
    expect(ticks(93)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(ticks(1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(ticks(0)).toEqual([0, 1]);
  });
});

describe("lineChart", () => {
  const svg = lineChart({
    title: "pull <vs> router",
    xLabel: "offered (req/s)",
    yLabel: "achieved (req/s)",
    series: [
      {
        name: "pull",
        points: [
          [10, 10],
          [20, 20],
          [30, Number.NaN],
        ],
      },
      {
        name: "router",
        points: [
          [10, 9],
          [20, 15],
        ],
      },
    ],
    mark: { x: 20, label: "knee 20 req/s" },
    hline: { y: 25, label: "SLO" },
  });

  it("is one SVG document with a line per series and the knee marked", () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg.match(/class="series"/g)).toHaveLength(2);
    expect(svg.match(/class="mark"/g)).toHaveLength(1);
    expect(svg).toContain("knee 20 req/s");
  });

  it("escapes text and leaves non-finite points out", () => {
    expect(svg).toContain("pull &#60;vs&#62; router");
    expect(svg).not.toContain("NaN");
    // The pull line has two points, so two markers plus the router's two.
    expect(svg.match(/<circle/g)).toHaveLength(4);
  });
});
