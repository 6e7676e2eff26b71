// Small DOM helpers: every text goes in through textContent, never as HTML, so a model or
// adapter name cannot inject markup.

const SVG = "http://www.w3.org/2000/svg";

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | undefined>} [attrs]
 * @param {...(Node | string | number | undefined | null | false)} children
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === "object" ? child : String(child));
  }
  return node;
}

/** @param {number} bytes */
export function bytes(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 || u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

/** @param {number | undefined} v */
export function num(v, digits = 1) {
  if (v === undefined || !Number.isFinite(v)) return "–";
  return v >= 100 ? v.toFixed(0) : v.toFixed(digits);
}

/** @param {number} fraction */
export function percent(fraction) {
  return `${Math.round(fraction * 100)} %`;
}

/** @param {number} ms */
export function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ago`;
}

/**
 * A memory bar: one segment per copy, then free space, with the headroom the model-loader
 * keeps free marked at its right end.
 *
 * @param {number} capacity
 * @param {number} headroom
 * @param {{ label: string, bytes: number, state: string }[]} segments
 */
export function memoryBar(capacity, headroom, segments) {
  const bar = el("div", { class: "membar", role: "img" });
  const used = segments.reduce((n, s) => n + s.bytes, 0);
  bar.setAttribute(
    "aria-label",
    `${bytes(used)} of ${bytes(capacity)} used, ${bytes(Math.max(0, capacity - used))} free, ${bytes(headroom)} headroom`,
  );
  if (capacity > 0 && headroom > 0) {
    const mark = el("span", { class: "headroom", title: `headroom ${bytes(headroom)}` });
    mark.style.width = `${Math.min(100, (headroom / capacity) * 100)}%`;
    bar.append(mark);
  }
  for (const s of segments) {
    const width = capacity > 0 ? Math.min(100, (s.bytes / capacity) * 100) : 0;
    const seg = el("span", {
      class: `seg ${s.state}`,
      title: `${s.label}: ${bytes(s.bytes)} (${s.state})`,
    });
    seg.style.width = `${width}%`;
    bar.append(seg);
  }
  return bar;
}

/**
 * A sparkline of the last values, scaled to its own maximum.
 *
 * @param {readonly number[]} values
 * @param {string} label
 */
export function sparkline(values, label) {
  const width = 120;
  const height = 24;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  const max = Math.max(1e-9, ...values);
  svg.setAttribute("aria-label", `${label}: last ${num(values.at(-1) ?? 0)}, max ${num(max)}`);
  if (values.length > 1) {
    const step = width / (values.length - 1);
    const points = values
      .map(
        (v, i) => `${(i * step).toFixed(1)},${(height - 1 - (v / max) * (height - 2)).toFixed(1)}`,
      )
      .join(" ");
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points);
    svg.append(line);
  }
  return svg;
}

/**
 * A table; headers ending in `#` are numeric columns, aligned right like their cells.
 *
 * @param {string[]} headers
 * @param {HTMLElement[]} rows
 */
export function table(headers, rows) {
  const th = (/** @type {string} */ h) =>
    h.endsWith("#")
      ? el("th", { scope: "col", class: "num" }, h.slice(0, -1))
      : el("th", { scope: "col" }, h);
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, ...headers.map(th))),
    el("tbody", {}, ...rows),
  );
}
