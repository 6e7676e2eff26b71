/** One line of a chart. */
export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface ChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  /** A vertical marker, e.g. the knee, with its label. */
  readonly mark?: { readonly x: number; readonly label: string };
  /** A horizontal reference line, e.g. the SLO. */
  readonly hline?: { readonly y: number; readonly label: string };
}

const WIDTH = 640;
const HEIGHT = 400;
const PAD = { left: 70, right: 150, top: 40, bottom: 50 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"];

/** Text made safe for SVG (XML) content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Tick values: about five round numbers from 0 to at least `max`. */
export function ticks(max: number): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v < max + step - 1e-9 * step; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function format(v: number): string {
  return Math.abs(v) >= 10_000
    ? `${Number((v / 1000).toPrecision(4))}k`
    : String(Number(v.toPrecision(4)));
}

/**
 * A line chart as a standalone SVG document, with no dependencies: axes from zero, round
 * ticks, one polyline with point markers per series, a legend, and the optional markers.
 * Non-finite points (a step with no answers has no p99) are left out of their line.
 */
export function lineChart(options: ChartOptions): string {
  const finite = options.series.flatMap((s) =>
    s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)),
  );
  const xTicks = ticks(Math.max(0, ...finite.map(([x]) => x), options.mark?.x ?? 0));
  const yTicks = ticks(Math.max(0, ...finite.map(([, y]) => y), options.hline?.y ?? 0));
  const xMax = xTicks.at(-1) as number;
  const yMax = yTicks.at(-1) as number;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const px = (x: number): number => PAD.left + (x / xMax) * plotW;
  const py = (y: number): number => PAD.top + plotH - (y / yMax) * plotH;
  const r = (v: number): string => v.toFixed(1);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(options.title)}</text>`,
  ];
  for (const t of xTicks) {
    parts.push(
      `<line x1="${r(px(t))}" y1="${PAD.top}" x2="${r(px(t))}" y2="${PAD.top + plotH}" stroke="#eee"/>`,
      `<text x="${r(px(t))}" y="${PAD.top + plotH + 16}" text-anchor="middle">${format(t)}</text>`,
    );
  }
  for (const t of yTicks) {
    parts.push(
      `<line x1="${PAD.left}" y1="${r(py(t))}" x2="${PAD.left + plotW}" y2="${r(py(t))}" stroke="#eee"/>`,
      `<text x="${PAD.left - 6}" y="${r(py(t) + 4)}" text-anchor="end">${format(t)}</text>`,
    );
  }
  parts.push(
    `<rect x="${PAD.left}" y="${PAD.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<text x="${PAD.left + plotW / 2}" y="${HEIGHT - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(18 ${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  if (options.hline !== undefined) {
    const y = r(py(options.hline.y));
    parts.push(
      `<line x1="${PAD.left}" y1="${y}" x2="${PAD.left + plotW}" y2="${y}" stroke="#999" stroke-dasharray="2 3"/>`,
      `<text x="${PAD.left + plotW - 4}" y="${Number(y) - 4}" text-anchor="end" fill="#666">${escapeXml(options.hline.label)}</text>`,
    );
  }
  if (options.mark !== undefined) {
    const x = r(px(options.mark.x));
    parts.push(
      `<line class="mark" x1="${x}" y1="${PAD.top}" x2="${x}" y2="${PAD.top + plotH}" stroke="#000" stroke-dasharray="6 4"/>`,
      `<text x="${Number(x) + 4}" y="${PAD.top + 14}">${escapeXml(options.mark.label)}</text>`,
    );
  }
  options.series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length] as string;
    const points = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (points.length > 0) {
      parts.push(
        `<polyline class="series" fill="none" stroke="${colour}" stroke-width="2" points="${points.map(([x, y]) => `${r(px(x))},${r(py(y))}`).join(" ")}"/>`,
        ...points.map(
          ([x, y]) => `<circle cx="${r(px(x))}" cy="${r(py(y))}" r="3" fill="${colour}"/>`,
        ),
      );
    }
    const ly = PAD.top + 10 + i * 18;
    parts.push(
      `<line x1="${WIDTH - PAD.right + 12}" y1="${ly}" x2="${WIDTH - PAD.right + 32}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${WIDTH - PAD.right + 38}" y="${ly + 4}">${escapeXml(s.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
