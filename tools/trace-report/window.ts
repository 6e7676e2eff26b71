import { readFile } from "node:fs/promises";

/** A time window to read traces from. */
export interface Window {
  readonly from: Date;
  readonly to: Date;
}

/** Why a window could not be worked out from the arguments; the CLI prints it and exits 2. */
export class WindowError extends Error {
  override readonly name = "WindowError";
}

const UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** `now`, an ISO 8601 time, or a time relative to `now`: `-90s`, `-5m`, `-1h`. */
export function parseTime(text: string, now: Date): Date {
  if (text === "now") return now;
  const relative = /^-(\d+(?:\.\d+)?)([smh])$/.exec(text);
  if (relative !== null) {
    return new Date(now.getTime() - Number(relative[1]) * (UNITS[relative[2] ?? "s"] ?? 1_000));
  }
  const at = new Date(text);
  if (Number.isNaN(at.getTime()) || !/^\d{4}-\d\d-\d\d/.test(text)) {
    throw new WindowError(`'${text}' is not a time: use now, -5m, -90s, -1h or ISO 8601`);
  }
  return at;
}

/** A bench result's steps, as `result.json` (tools/bench) writes them. */
interface BenchResult {
  readonly modes?: Record<
    string,
    {
      readonly steps?: readonly { offered_rps?: number; window?: { from?: string; to?: string } }[];
    }
  >;
}

/**
 * The window of a bench run: all of a mode's steps, or the one offered `step` requests/s.
 * The mode defaults to `pull` (Shoal's own), else the only one there is.
 */
export async function benchWindow(path: string, mode?: string, step?: number): Promise<Window> {
  let result: BenchResult;
  try {
    result = JSON.parse(await readFile(path, "utf8")) as BenchResult;
  } catch (err) {
    throw new WindowError(`cannot read bench result ${path}: ${(err as Error).message}`);
  }
  const modes = Object.keys(result.modes ?? {});
  const name =
    mode ?? (modes.includes("pull") ? "pull" : modes.length === 1 ? modes[0] : undefined);
  if (name === undefined) {
    throw new WindowError(`${path} has modes ${modes.join(", ") || "none"}; name one with --mode`);
  }
  const steps = (result.modes?.[name]?.steps ?? []).filter(
    (s) => step === undefined || s.offered_rps === step,
  );
  const windows = steps.flatMap((s) =>
    s.window?.from !== undefined && s.window.to !== undefined
      ? [{ from: new Date(s.window.from), to: new Date(s.window.to) }]
      : [],
  );
  if (windows.length === 0) {
    throw new WindowError(
      step === undefined
        ? `${path} mode ${name} has no step with a time window (a bench from before windows were recorded?)`
        : `${path} mode ${name} has no step offered ${step} req/s`,
    );
  }
  return {
    from: new Date(Math.min(...windows.map((w) => w.from.getTime()))),
    to: new Date(Math.max(...windows.map((w) => w.to.getTime()))),
  };
}
