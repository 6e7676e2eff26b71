import { escapeXml, ticks } from "@shoal/loadgen";
import { PHASES, type Phase } from "./phases.js";
import type { GroupSummary, Report } from "./report.js";

const COLOURS: Record<Phase, string> = {
  annotate: "#9467bd",
  offload: "#8c564b",
  queue: "#d62728",
  load: "#ff7f0e",
  adapter: "#bcbd22",
  batch: "#17becf",
  compute: "#1f77b4",
  other: "#7f7f7f",
};
const WIDTH = 760;
const LEFT = 260;
const RIGHT = 20;
const BAR = 22;
const GAP = 14;
const TOP = 50;

/**
 * Where the time went as a standalone SVG: one horizontal bar per model (and one for all
 * requests), its mean request split into phases, in ms.
 */
export function phaseChart(report: Report): string {
  const rows: [string, GroupSummary][] = [
    ["all requests", report.all],
    ...Object.entries(report.models),
  ];
  const max = Math.max(...rows.map(([, g]) => PHASES.reduce((n, p) => n + g.phases[p].mean, 0)));
  const axis = ticks(max);
  const top = axis.at(-1) ?? 1;
  const plotW = WIDTH - LEFT - RIGHT;
  const x = (v: number): number => LEFT + (v / top) * plotW;
  const plotH = rows.length * (BAR + GAP);
  const height = TOP + plotH + 70;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15">Mean request time by phase, ${escapeXml(report.window.from)} – ${escapeXml(report.window.to)}</text>`,
  ];
  for (const t of axis) {
    out.push(
      `<line x1="${x(t)}" y1="${TOP - 6}" x2="${x(t)}" y2="${TOP + plotH}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${TOP + plotH + 16}" text-anchor="middle">${t}</text>`,
    );
  }
  out.push(
    `<text x="${LEFT + plotW / 2}" y="${TOP + plotH + 34}" text-anchor="middle">ms (mean per request)</text>`,
  );
  rows.forEach(([name, g], i) => {
    const y = TOP + i * (BAR + GAP);
    out.push(
      `<text x="${LEFT - 8}" y="${y + BAR / 2 + 4}" text-anchor="end">${escapeXml(`${name} (${g.requests})`)}</text>`,
    );
    let at = 0;
    for (const p of PHASES) {
      const w = g.phases[p].mean;
      if (w <= 0) continue;
      out.push(
        `<rect x="${x(at)}" y="${y}" width="${Math.max(0.5, x(at + w) - x(at))}" height="${BAR}" fill="${COLOURS[p]}"><title>${p}: ${w} ms</title></rect>`,
      );
      at += w;
    }
  });
  PHASES.forEach((p, i) => {
    const lx = LEFT + i * 62;
    const ly = height - 18;
    out.push(
      `<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${COLOURS[p]}"/>`,
      `<text x="${lx + 14}" y="${ly}">${p}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
