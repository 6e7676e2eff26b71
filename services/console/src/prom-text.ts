/** One sample of the Prometheus text format: its name, labels and value. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;

/**
 * Parses the samples of a Prometheus text exposition whose names start with one of
 * `prefixes` (the console reads a few families; a service's page has hundreds of lines).
 * Comments, other families and lines that do not parse are skipped.
 */
export function parsePromText(text: string, prefixes: readonly string[]): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    if (!prefixes.some((p) => line.startsWith(p))) continue;
    const m = LINE.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    if (Number.isNaN(value)) continue;
    const labels = parseLabels(m[2] ?? "");
    if (labels === undefined) continue;
    out.push({ name: m[1] as string, labels, value });
  }
  return out;
}

function parseLabels(text: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (m === null || LABEL.lastIndex === at) return undefined;
    labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_, c: string) =>
      c === "n" ? "\n" : c,
    );
  }
  return labels;
}
