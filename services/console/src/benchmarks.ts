import { readdir, readFile, stat } from "node:fs/promises";
import { basename, join, resolve, sep } from "node:path";
import type { BenchmarkView } from "./snapshot.js";

/**
 * Results shown, newest first: those with charts (what a bench or autotune run draws), then
 * those without. Result files larger than the limit are skipped unread.
 */
const MAX_CHARTED = 8;
const MAX_PLAIN = 12;
const MAX_RESULT_BYTES = 4 * 1024 * 1024;
const MAX_HEADLINE = 8;

/**
 * Bench and autotune results the console can find: `*result.json` files in the configured
 * directories (the repository's `docs/bench` and the `--out` directories of local runs), each
 * with the SVG charts written beside it under the same prefix (`fleet-result.json` →
 * `fleet-throughput.svg`; `result.json` → `throughput.svg`).
 */
export class Benchmarks {
  readonly #dirs: readonly string[];
  /** Chart URL path → file, for the charts listed in the last scan: nothing else is served. */
  #charts = new Map<string, string>();

  constructor(dirs: readonly string[]) {
    this.#dirs = dirs.map((d) => resolve(d));
  }

  get configured(): boolean {
    return this.#dirs.length > 0;
  }

  /** The file behind `/bench/<path>`, when the last scan listed it. */
  chart(path: string): string | undefined {
    return this.#charts.get(path);
  }

  async scan(): Promise<BenchmarkView[]> {
    const found: (BenchmarkView & { readonly dir: number })[] = [];
    const charts = new Map<string, string>();
    for (const [i, dir] of this.#dirs.entries()) {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        continue;
      }
      for (const name of names.filter((n) => n.endsWith("result.json"))) {
        const file = join(dir, name);
        const info = await stat(file).catch(() => undefined);
        if (info === undefined || !info.isFile() || info.size > MAX_RESULT_BYTES) continue;
        const prefix = name.slice(0, -"result.json".length);
        // `fleet-throughput.svg` belongs to `fleet-result.json`, `fleet-fine-throughput.svg` not.
        const listed = names
          .filter(
            (n) =>
              n.startsWith(prefix) && n.endsWith(".svg") && !n.slice(prefix.length).includes("-"),
          )
          .map((n) => {
            const path = `${i}/${n}`;
            charts.set(path, join(dir, n));
            return path;
          });
        found.push({
          dir: i,
          file: `${basename(dir)}${sep}${name}`,
          modifiedAt: info.mtimeMs,
          ...(await summary(file)),
          charts: listed,
        });
      }
    }
    found.sort((a, b) => b.modifiedAt - a.modifiedAt || a.file.localeCompare(b.file));
    const shown = [
      ...found.filter((f) => f.charts.length > 0).slice(0, MAX_CHARTED),
      ...found.filter((f) => f.charts.length === 0).slice(0, MAX_PLAIN),
    ];
    // Only the charts of the results shown are served.
    const served = new Set(shown.flatMap((f) => f.charts));
    this.#charts = new Map([...charts].filter(([path]) => served.has(path)));
    return shown.map(({ dir: _dir, ...view }) => view);
  }
}

async function summary(
  file: string,
): Promise<{ scenario?: string; headline: Record<string, number> }> {
  let result: unknown;
  try {
    result = JSON.parse(await readFile(file, "utf8"));
  } catch {
    return { headline: {} };
  }
  if (typeof result !== "object" || result === null) return { headline: {} };
  const r = result as Record<string, unknown>;
  const headline: Record<string, number> = {};
  for (const [key, value] of Object.entries(r)) {
    if (typeof value === "number" && Object.keys(headline).length < MAX_HEADLINE) {
      headline[key] = value;
    }
  }
  return { ...(typeof r["scenario"] === "string" ? { scenario: r["scenario"] } : {}), headline };
}
